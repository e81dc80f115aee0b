//! Deep and wide nesting with the recursive schema: round trips at any
//! depth the limits allow, and a clear error (never a stack overflow) past
//! them.

use granola::{Decode, DecodeErrorKind, DecodeOptions, Message};
use granola_tests::recursive::Node;
use proptest::prelude::*;

fn chain(depth: usize) -> Node {
    let mut root = Node {
        value: -1,
        ..Default::default()
    };
    for d in (0..depth).rev() {
        root = Node {
            value: d as i64,
            left: Some(Box::new(root)),
            ..Default::default()
        };
    }
    root
}

fn depth_of(n: &Node) -> usize {
    let mut d = 0;
    let mut cur = n;
    while let Some(next) = cur.left.as_deref() {
        d += 1;
        cur = next;
    }
    d
}

#[test]
fn depth_limit_is_an_error_not_a_crash() {
    let limit = DecodeOptions::default().max_depth as usize;
    let ok = chain(limit).to_vec().unwrap();
    assert_eq!(depth_of(&Node::decode(&ok).unwrap()), limit);
    let too_deep = chain(limit + 1).to_vec().unwrap();
    let e = Node::decode(&too_deep).unwrap_err();
    assert_eq!(e.kind, DecodeErrorKind::TooDeep);
    // A stricter reader refuses what a default one accepts.
    let strict = DecodeOptions {
        max_depth: 3,
        ..DecodeOptions::default()
    };
    assert!(Node::decode_with(&chain(3).to_vec().unwrap(), &strict).is_ok());
    assert!(Node::decode_with(&chain(4).to_vec().unwrap(), &strict).is_err());
}

#[test]
fn self_referencing_header_is_bounded() {
    // Node whose `left` (field 2) points back at the root header: an
    // infinite chain on the wire, stopped by the depth limit.
    let words: [u32; 4] = [1, 0b10, 17, 0];
    let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    bytes.push(granola::wire::kind::MESSAGE);
    let e = Node::decode(&bytes).unwrap_err();
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

fn build(s: &Shape) -> Node {
    match s {
        Shape::Leaf(v) => Node {
            value: *v,
            ..Default::default()
        },
        Shape::Branch(left, children) => Node {
            left: Some(Box::new(build(left))),
            children: children.iter().map(build).collect(),
            ..Default::default()
        },
    }
}

proptest! {
    #[test]
    fn trees_round_trip(s in shape()) {
        let n = build(&s);
        let bytes = n.to_vec().unwrap();
        let d = Node::decode(&bytes).unwrap();
        prop_assert_eq!(&d, &n);
        prop_assert!(d.to_vec().unwrap() == bytes);
    }
}
