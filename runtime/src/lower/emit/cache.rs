//! The module's MLIR types and attributes, parsed once each and cached by value.

use super::super::{Attr, BuildError};
use crate::types::TensorType;
use melior::{
    Context,
    ir::{Attribute, Identifier, Location, Type},
};
use std::collections::HashMap;

/// Parses and caches the MLIR types and attributes the module needs. Both maps are keyed by
/// value: a key made from an address (of an interned `Arc`, say) would be reused by a later
/// allocation once the first one is freed, and hand that one the wrong type.
pub(super) struct Cache<'c> {
    pub(super) ctx: &'c Context,
    types: HashMap<TensorType, Type<'c>>,
    /// By a structural hash of the value (no text is formatted for a lookup), each bucket
    /// holding the values themselves, compared exactly (floats by their bits).
    attrs: HashMap<u64, Vec<(Attr, Attribute<'c>)>>,
    /// Attribute names, interned once.
    names: HashMap<&'static str, Identifier<'c>>,
    pub(super) loc: Location<'c>,
}

impl<'c> Cache<'c> {
    /// An empty cache for `ctx`.
    pub(super) fn new(ctx: &'c Context) -> Self {
        Cache {
            ctx,
            types: HashMap::new(),
            attrs: HashMap::new(),
            names: HashMap::new(),
            loc: Location::unknown(ctx),
        }
    }
}

/// A structural hash of an attribute value: FNV-1a over its variant tags and contents.
fn attr_hash(a: &Attr) -> u64 {
    fn eat(h: &mut u64, bytes: &[u8]) {
        for &b in bytes {
            *h ^= u64::from(b);
            *h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn go(h: &mut u64, a: &Attr) {
        use Attr::*;
        match a {
            Bool(b) => eat(h, &[0, u8::from(*b)]),
            I32(v) => {
                eat(h, &[1]);
                eat(h, &v.to_le_bytes());
            }
            I64(v) => {
                eat(h, &[2]);
                eat(h, &v.to_le_bytes());
            }
            Int(v, t) => {
                eat(h, &[3]);
                eat(h, &v.to_le_bytes());
                eat(h, t.as_bytes());
            }
            F32(v) => {
                eat(h, &[4]);
                eat(h, &v.to_bits().to_le_bytes());
            }
            F64(v) => {
                eat(h, &[5]);
                eat(h, &v.to_bits().to_le_bytes());
            }
            Str(b) => {
                eat(h, &[6]);
                eat(h, &b.len().to_le_bytes());
                eat(h, b);
            }
            DenseI64(vs) => {
                eat(h, &[7]);
                eat(h, &vs.len().to_le_bytes());
                for v in vs {
                    eat(h, &v.to_le_bytes());
                }
            }
            Array(items) => {
                eat(h, &[8]);
                eat(h, &items.len().to_le_bytes());
                for i in items {
                    go(h, i);
                }
            }
            Dict(entries) => {
                eat(h, &[9]);
                eat(h, &entries.len().to_le_bytes());
                for (k, v) in entries {
                    eat(h, &k.len().to_le_bytes());
                    eat(h, k.as_bytes());
                    go(h, v);
                }
            }
            Raw(t) => {
                eat(h, &[10]);
                eat(h, t.as_bytes());
            }
        }
    }
    let mut h = 0xcbf2_9ce4_8422_2325;
    go(&mut h, a);
    h
}

/// Equality as the attribute's text would see it: floats by their bits (so NaNs match
/// themselves, and 0.0 and -0.0 differ).
fn attr_eq(a: &Attr, b: &Attr) -> bool {
    use Attr::*;
    match (a, b) {
        (F32(x), F32(y)) => x.to_bits() == y.to_bits(),
        (F64(x), F64(y)) => x.to_bits() == y.to_bits(),
        (Array(x), Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| attr_eq(p, q)),
        (Dict(x), Dict(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k1, v1), (k2, v2))| k1 == k2 && attr_eq(v1, v2))
        }
        _ => a == b,
    }
}

impl<'c> Cache<'c> {
    pub(super) fn ty(&mut self, t: &TensorType) -> Result<Type<'c>, BuildError> {
        if let Some(ty) = self.types.get(t) {
            return Ok(*ty);
        }
        let text = t.to_string();
        let ty = Type::parse(self.ctx, &text)
            .ok_or_else(|| BuildError::new(format!("MLIR cannot parse the type `{text}`")))?;
        self.types.insert(t.clone(), ty);
        Ok(ty)
    }

    pub(super) fn attr(&mut self, value: &Attr) -> Result<Attribute<'c>, BuildError> {
        let h = attr_hash(value);
        if let Some(bucket) = self.attrs.get(&h)
            && let Some((_, a)) = bucket.iter().find(|(v, _)| attr_eq(v, value))
        {
            return Ok(*a);
        }
        let text = value.to_string();
        let a = Attribute::parse(self.ctx, &text)
            .ok_or_else(|| BuildError::new(format!("MLIR cannot parse the attribute `{text}`")))?;
        self.attrs.entry(h).or_default().push((value.clone(), a));
        Ok(a)
    }

    pub(super) fn name(&mut self, name: &'static str) -> Identifier<'c> {
        let ctx = self.ctx;
        *self
            .names
            .entry(name)
            .or_insert_with(|| Identifier::new(ctx, name))
    }
}
