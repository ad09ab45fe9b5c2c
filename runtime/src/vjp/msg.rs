//! The compile-time check's messages: built in a constant, without allocation.

use super::{ParamSig, SigDtype};

/// A message built in a constant: why a pairing is wrong (the compile-time check's panic
/// message).
pub struct Msg {
    buf: [u8; 600],
    len: usize,
}

impl core::fmt::Debug for Msg {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Msg {
    pub(super) const fn new() -> Msg {
        Msg {
            buf: [0; 600],
            len: 0,
        }
    }
    pub(super) const fn push(mut self, s: &str) -> Msg {
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() && self.len < self.buf.len() {
            self.buf[self.len] = b[i];
            self.len += 1;
            i += 1;
        }
        self
    }
    /// A tensor's element type and, when fixed, its rank: `f32` or `rank-2 f32`.
    pub(super) const fn push_tensor(self, p: ParamSig) -> Msg {
        let m = match p.rank {
            Some(r) if r < 10 => {
                let digit = [b'0' + r as u8];
                match core::str::from_utf8(&digit) {
                    Ok(d) => self.push("rank-").push(d).push(" "),
                    Err(_) => self,
                }
            }
            Some(_) => self.push("high-rank "),
            None => self,
        };
        m.push_dtype(p.dtype)
    }

    pub(super) const fn push_dtype(self, d: SigDtype) -> Msg {
        match d {
            SigDtype::None => self.push("not a tensor"),
            SigDtype::Fixed(t) => self.push(t.mlir_name()),
            SigDtype::Var(v, allowed) => {
                let mut m = self.push(v).push(" (");
                let mut i = 0;
                while i < allowed.len() {
                    if i > 0 {
                        m = m.push(", ");
                    }
                    m = m.push(allowed[i].mlir_name());
                    i += 1;
                }
                m.push(")")
            }
        }
    }
    /// The message.
    pub const fn as_str(&self) -> &str {
        let (bytes, _) = self.buf.split_at(self.len);
        match core::str::from_utf8(bytes) {
            Ok(s) => s,
            // Only whole `&str`s are pushed; a message cut at the buffer's end may split one.
            Err(_) => "the vjp pairing is wrong (message too long)",
        }
    }
}
