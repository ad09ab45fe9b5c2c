//! Externals of distinct sizes: each entry argument has its own type; reduce bodies of two
//! element types keep theirs.
//!
//! A regression suite for a bug where the emitter's type cache, keyed by the address of a
//! temporary, gave a later external the type of an earlier one.

use super::*;

/// Where a test declares an external: in the entry, or in one of two nested helpers
/// (`outer` calls `inner`; the entry calls `outer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Entry,
    Outer,
    Inner,
}

/// One external of a test module: where it is declared, its size, whether it is mutable.
#[derive(Clone, Copy, Debug)]
struct Ext {
    place: Place,
    size: usize,
    mutable: bool,
}

fn ext_spec(i: usize, e: &Ext) -> External {
    External {
        name: format!("e{i}"),
        descriptor: format!("sizes::D{i}"),
        fingerprint: 0x1000 + i as u64,
        size: e.size,
        mutable: e.mutable,
    }
}

/// `main(x: tensor<2xf32>)` returning `x` and every external's bytes, the externals declared
/// (in `exts` order) where each says; helpers return their own externals too, so every value
/// crosses at least one call.
fn returning_externals(exts: &[Ext]) -> Module {
    let ty = t(ElementType::F32, &[2]);
    let mut m = Module::new();
    fn declare(
        f: &mut FuncBuilder<'_>,
        exts: &[Ext],
        place: Place,
    ) -> Vec<(usize, customop::lower::Value)> {
        exts.iter()
            .enumerate()
            .filter(|(_, e)| e.place == place)
            .map(|(i, e)| (i, f.external_raw(ext_spec(i, e)).unwrap()))
            .collect()
    }
    let mut inner = m.helper("inner", [ty.clone()]).unwrap();
    let own = declare(&mut inner, exts, Place::Inner);
    let x = inner.arg(0).unwrap();
    let mut rets = vec![&x];
    rets.extend(own.iter().map(|(_, v)| v));
    let inner_order: Vec<usize> = own.iter().map(|(i, _)| *i).collect();
    let inner = inner.ret(&rets).unwrap();

    let mut outer = m.helper("outer", [ty.clone()]).unwrap();
    let own = declare(&mut outer, exts, Place::Outer);
    let x = outer.arg(0).unwrap();
    let from_inner = outer.call(&inner, &[&x]).unwrap();
    let mut rets: Vec<&customop::lower::Value> = from_inner.iter().collect();
    rets.extend(own.iter().map(|(_, v)| v));
    let mut outer_order = inner_order;
    outer_order.extend(own.iter().map(|(i, _)| *i));
    let outer = outer.ret(&rets).unwrap();

    let mut main = m.entry("main", [ty.clone()]).unwrap();
    let own = declare(&mut main, exts, Place::Entry);
    let x = main.arg(0).unwrap();
    let from_outer = main.call(&outer, &[&x]).unwrap();
    // Return the externals in declaration order, whichever function made them.
    let mut by_index: Vec<Option<customop::lower::Value>> = vec![None; exts.len()];
    for (i, v) in outer_order.iter().zip(&from_outer[1..]) {
        by_index[*i] = Some(v.clone());
    }
    for (i, v) in own {
        by_index[i] = Some(v);
    }
    let by_index: Vec<customop::lower::Value> = by_index.into_iter().map(Option::unwrap).collect();
    let mut rets = vec![&from_outer[0]];
    rets.extend(by_index.iter());
    main.ret(&rets).unwrap();
    m
}

/// What the entry's annotated arguments must be: after `x`, in the order the module lists its
/// externals (the order of first declaration: inner's, outer's, then the entry's).
fn expected_args(m: &Module, exts: &[Ext]) -> Vec<ExternalArg> {
    let order: Vec<usize> = m
        .externals()
        .iter()
        .map(|e| e.name[1..].parse().unwrap())
        .collect();
    order
        .iter()
        .enumerate()
        .map(|(pos, &i)| ExternalArg {
            index: 1 + pos,
            type_bytes: Some(exts[i].size as i64),
            descriptor: format!("sizes::D{i}"),
            size: exts[i].size as i64,
            mutable: exts[i].mutable,
        })
        .collect()
}

fn ext(place: Place, size: usize, mutable: bool) -> Ext {
    Ext {
        place,
        size,
        mutable,
    }
}

#[test]
fn externals_of_distinct_sizes_get_their_own_types_and_run() {
    use Place::*;
    let cases: Vec<Vec<Ext>> = vec![
        // The reported case: two in the entry, 72 and 96 bytes.
        vec![ext(Entry, 72, false), ext(Entry, 96, false)],
        // One in a helper, one in the entry.
        vec![ext(Inner, 72, false), ext(Entry, 96, true)],
        vec![
            ext(Outer, 40, true),
            ext(Entry, 28, false),
            ext(Inner, 56, false),
        ],
        vec![
            ext(Entry, 24, false),
            ext(Inner, 200, true),
            ext(Outer, 33, false),
            ext(Entry, 57, true),
            ext(Inner, 1000, false),
        ],
    ];
    let h = Harness::get();
    for exts in &cases {
        let m = returning_externals(exts);
        let text = m.to_text().unwrap();
        assert_eq!(
            external_args(&text, "main"),
            expected_args(&m, exts),
            "{exts:?}\n{text}"
        );
        // XLA runs it only if every argument has the size it is fed, and each output is the
        // bytes fed to its own argument.
        let x = [0.5f32, -1.0];
        let mut inputs = vec![Array::f32(&[2], &x)];
        let bytes: Vec<Vec<u8>> = m
            .externals()
            .iter()
            .enumerate()
            .map(|(k, e)| (0..e.size).map(|j| (j * 7 + k * 31) as u8).collect())
            .collect();
        for b in &bytes {
            inputs.push(Array::u8(&[b.len() as i64], b));
        }
        let out = h.run(&text, &inputs).unwrap();
        assert_eq!(out[0].to_f32(), x.to_vec());
        for (pos, e) in m.externals().iter().enumerate() {
            let i: usize = e.name[1..].parse().unwrap();
            assert_eq!(out[1 + i].bytes(), bytes[pos], "{exts:?}: external e{i}");
        }
    }
}

#[test]
fn reductions_over_two_element_types_keep_their_body_types() {
    // Each reduce body has scalar block arguments of its own element type; a type cache
    // keyed by a temporary's address could give the second body the first one's.
    let mut m = Module::new();
    let mut f = m
        .entry(
            "main",
            [t(ElementType::F32, &[2, 3]), t(ElementType::I32, &[2, 3])],
        )
        .unwrap();
    let (a, b) = (f.arg(0).unwrap(), f.arg(1).unwrap());
    let sa = f.reduce(ReduceOp::Add, &a, &[1]).unwrap();
    let sb = f.reduce(ReduceOp::Max, &b, &[1]).unwrap();
    let sc = f.reduce(ReduceOp::Add, &b, &[0]).unwrap();
    f.ret(&[&sa, &sb, &sc]).unwrap();
    let text = m.to_text().unwrap();
    let bodies: Vec<&str> = text.lines().filter(|l| l.contains("^bb0(")).collect();
    assert_eq!(bodies.len(), 3, "{text}");
    assert_eq!(bodies[0].matches(": tensor<f32>").count(), 2, "{text}");
    assert_eq!(bodies[1].matches(": tensor<i32>").count(), 2, "{text}");
    assert_eq!(bodies[2].matches(": tensor<i32>").count(), 2, "{text}");
    let xs = [1.0f32, 2.0, 3.5, -1.0, 0.0, 4.0];
    let is = [3i32, -7, 5, 0, 9, -2];
    let out = Harness::get()
        .run(&text, &[Array::f32(&[2, 3], &xs), Array::i32(&[2, 3], &is)])
        .unwrap();
    assert_eq!(out[0].to_f32(), vec![6.5, 3.0]);
    assert_eq!(out[1].to_i32(), vec![5, 9]);
    assert_eq!(out[2].to_i32(), vec![3, 2, 3]);
}

mod external_sizes_property {
    use super::*;
    use proptest::prelude::*;

    fn place() -> impl Strategy<Value = Place> {
        prop_oneof![Just(Place::Entry), Just(Place::Outer), Just(Place::Inner)]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any set of 1 to 8 externals, of any sizes (equal ones too), declared anywhere:
        /// the printed entry arguments have exactly the declared sizes, types and annotations.
        #[test]
        fn printed_entry_types_match_the_declared_sizes(
            exts in prop::collection::vec((place(), 1usize..4096, any::<bool>()), 1..8)
        ) {
            let exts: Vec<Ext> = exts
                .into_iter()
                .map(|(place, size, mutable)| Ext { place, size, mutable })
                .collect();
            let m = returning_externals(&exts);
            let text = m.to_text().unwrap();
            prop_assert_eq!(external_args(&text, "main"), expected_args(&m, &exts));
        }
    }
}
