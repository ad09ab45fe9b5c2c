//! Runs of an input's dimensions (`..x.dims(start..stop)` in a shape rule): an output whose
//! rank follows an input's.

/// The dimensions `[s, e)` that a run `start..stop` takes of a rank-`rank` input, as Python's
/// `x.shape[start:stop]` reads it (a negative bound counts from the rank, `stop` absent is the
/// rank), except that a bound outside the rank, or `s > e`, is `None`: never clamped.
pub fn run_bounds(rank: usize, start: i64, stop: Option<i64>) -> Option<(usize, usize)> {
    let r = i64::try_from(rank).ok()?;
    let norm = |v: i64| if v < 0 { r.checked_add(v) } else { Some(v) };
    let (s, e) = (norm(start)?, stop.map_or(Some(r), norm)?);
    (0 <= s && s <= e && e <= r).then_some((s as usize, e as usize))
}

#[cfg(test)]
mod tests {
    use super::run_bounds;

    #[test]
    fn runs_read_as_python_slices_never_clamped() {
        // x.shape[:-1], x.shape[1:], x.shape[:], x.shape[-2:-1]
        assert_eq!(run_bounds(3, 0, Some(-1)), Some((0, 2)));
        assert_eq!(run_bounds(1, 0, Some(-1)), Some((0, 0)));
        assert_eq!(run_bounds(3, 1, None), Some((1, 3)));
        assert_eq!(run_bounds(0, 0, None), Some((0, 0)));
        assert_eq!(run_bounds(4, -2, Some(-1)), Some((2, 3)));
        // Python would clamp these to empty or shorter runs; here each is an error.
        assert_eq!(run_bounds(0, 0, Some(-1)), None);
        assert_eq!(run_bounds(2, 3, None), None);
        assert_eq!(run_bounds(2, 0, Some(5)), None);
        assert_eq!(run_bounds(3, 2, Some(1)), None);
        assert_eq!(run_bounds(2, i64::MIN, None), None);
    }
}
