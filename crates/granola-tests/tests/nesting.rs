//! Deep and wide nesting with the recursive schema: round trips at any
//! depth the limits allow, and a clear error (never a stack overflow) past
//! them.

use granola::{Context, Decode, DecodeErrorKind, DecodeOptions, Message, Pool};
use granola_tests::recursive::Node;
use proptest::prelude::*;

fn chain<'a>(ctx: &'a Context, depth: usize) -> Node<'a> {
    let mut root = Node::new(ctx);
    let mut cur = &mut root;
    for d in 0..depth {
        cur.set_value(d as i64);
        cur = cur.mut_left();
    }
    cur.set_value(-1);
    root
}

fn depth_of(n: &Node<'_>) -> usize {
    let mut d = 0;
    let mut cur = n;
    while let Some(next) = cur.get_left() {
        d += 1;
        cur = next;
    }
    d
}

#[test]
fn depth_limit_is_an_error_not_a_crash() {
    let pool = Pool::with_capacity(8 << 20).unwrap();
    let ctx = Context::new(&pool);
    let limit = ctx.decode_options().max_depth as usize;
    let ok = chain(&ctx, limit).to_vec().unwrap();
    assert_eq!(depth_of(&Node::decode(&ctx, &ok).unwrap()), limit);
    let too_deep = chain(&ctx, limit + 1).to_vec().unwrap();
    let e = Node::decode(&ctx, &too_deep).unwrap_err();
    assert_eq!(e.kind, DecodeErrorKind::TooDeep);
    // A stricter reader refuses what a default one accepts.
    let strict = Context::new(&pool).with_decode_options(DecodeOptions {
        max_depth: 3,
        ..DecodeOptions::default()
    });
    assert!(Node::decode(&strict, &chain(&ctx, 3).to_vec().unwrap()).is_ok());
    assert!(Node::decode(&strict, &chain(&ctx, 4).to_vec().unwrap()).is_err());
}

#[test]
fn self_referencing_header_is_bounded() {
    // Node whose `left` (field 2) points back at the root header: an
    // infinite chain on the wire, stopped by the depth limit.
    let words: [u32; 4] = [1, 0b10, 16, 0];
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let pool = Pool::with_capacity(8 << 20).unwrap();
    let ctx = Context::new(&pool);
    let e = Node::decode(&ctx, &bytes).unwrap_err();
    assert!(matches!(
        e.kind,
        DecodeErrorKind::TooDeep | DecodeErrorKind::TooManyItems
    ));
}

#[derive(Debug, Clone)]
enum Shape {
    Leaf(i64),
    Branch(Box<Shape>, Vec<Shape>),
}

fn shape() -> impl Strategy<Value = Shape> {
    any::<i64>()
        .prop_map(Shape::Leaf)
        .prop_recursive(12, 64, 4, |inner| {
            (inner.clone(), prop::collection::vec(inner, 0..4))
                .prop_map(|(l, c)| Shape::Branch(Box::new(l), c))
        })
}

fn fill(n: &mut Node<'_>, s: &Shape) {
    match s {
        Shape::Leaf(v) => n.set_value(*v),
        Shape::Branch(left, children) => {
            fill(n.mut_left(), left);
            n.init_children(children.len());
            for c in children {
                fill(n.append_children(), c);
            }
        }
    }
}

proptest! {
    #[test]
    fn trees_round_trip(s in shape()) {
        let pool = Pool::with_capacity(8 << 20).unwrap();
        let ctx = Context::new(&pool);
        let mut n = Node::new(&ctx);
        fill(&mut n, &s);
        let bytes = n.to_vec().unwrap();
        let d = Node::decode(&ctx, &bytes).unwrap();
        prop_assert_eq!(&d, &n);
        prop_assert!(d.to_vec().unwrap() == bytes);
    }
}
