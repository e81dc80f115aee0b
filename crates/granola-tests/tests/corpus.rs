//! The realistic corpus compiles (see `build.rs`) and round-trips: a
//! message of each API filled through the generated accessors, encoded,
//! decoded, compared, and read back through a view.

use granola::{Decode, DecodeOptions, IntoOwned, Message, Pool};
use granola_tests::corpus::pubsub::v1 as ps;
use granola_tests::corpus::store;
use granola_tests::google::protobuf as wkt;

#[test]
fn pubsub_round_trips() {
    let pool = Pool::with_capacity(8 << 20).unwrap();
    let payload = pool.alloc_copy(&[b'm'; 1000]).unwrap();
    let mut r = ps::StreamingPullResponse::default();
    for i in 0..3 {
        r.received_messages.push(ps::ReceivedMessage {
            ack_id: format!("ack-{i}").into(),
            delivery_attempt: i,
            message: Some(ps::PubsubMessage {
                data: payload.clone().into(), // referenced
                message_id: i.to_string().into(),
                attributes: [("origin".into(), "test".into())].into(),
                publish_time: Some(wkt::Timestamp {
                    seconds: 1_700_000_000 + i64::from(i),
                    nanos: 0,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    r.confirmation = Some(
        ps::streaming_pull_response::Confirmation::AcknowledgeConfirmation(
            ps::streaming_pull_response::AcknowledgeConfirmation {
                ack_ids: vec!["ack-0".into()],
                ..Default::default()
            },
        ),
    );
    assert_eq!(r.encoded_sizes_with(256).zero_copy_count(), 3);
    let bytes = r.to_vec().unwrap();
    let d = ps::StreamingPullResponse::decode(&bytes).unwrap();
    assert_eq!(d, r);
    let opts = DecodeOptions::default();
    let v = ps::StreamingPullResponseView::new(&bytes, &opts).unwrap();
    let m1 = v.received_messages_get(1).unwrap().unwrap();
    assert_eq!(m1.ack_id().unwrap(), "ack-1");
    assert_eq!(m1.message().unwrap().unwrap().data().unwrap(), &payload[..]);

    let mut t = ps::Topic {
        name: "projects/p/topics/t".into(),
        message_retention_duration: Some(wkt::Duration {
            seconds: 86_400,
            nanos: 0,
            ..Default::default()
        }),
        message_storage_policy: Some(ps::MessageStoragePolicy {
            allowed_persistence_regions: vec!["eu".into()],
            ..Default::default()
        }),
        ..Default::default()
    };
    t.set_state(ps::topic::State::Active);
    let bytes = t.to_vec().unwrap();
    let d = ps::Topic::decode(&bytes).unwrap();
    assert_eq!(d, t);
    assert_eq!(d.state(), ps::topic::State::Active);
}

#[test]
fn store_round_trips() {
    let mut o = store::Object {
        bucket: "b".into(),
        key: "k".into(),
        generation: -1,
        content: b"hello".into(),
        parts: [(
            "p0".into(),
            store::object::Part {
                crc64: u64::MAX,
                chunk: b"c".into(),
                ..Default::default()
            },
        )]
        .into(),
        metadata: Some(wkt::Struct {
            fields: [(
                "owner".into(),
                wkt::Value {
                    kind: Some(wkt::value::Kind::StringValue("me".into())),
                    ..Default::default()
                },
            )]
            .into(),
            ..Default::default()
        }),
        size_limit: Some(wkt::Int64Value {
            value: 1 << 40,
            ..Default::default()
        }),
        details: vec![wkt::Any {
            type_url: "type.googleapis.com/corpus.store.Object".into(),
            value: b"\x00".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    o.set_storage_class(store::object::StorageClass::Nearline);
    let g = store::GetRequest {
        bucket: "b".into(),
        condition: Some(store::get_request::Condition::IfModifiedSince(
            wkt::Timestamp {
                seconds: 5,
                nanos: 0,
                ..Default::default()
            },
        )),
        ..Default::default()
    };
    let mut w = store::WatchEvent {
        object: Some(o),
        revision: -7,
        ..Default::default()
    };
    w.set_kind(store::watch_event::Kind::Deleted);
    let bytes = w.to_vec().unwrap();
    let d = store::WatchEvent::decode(&bytes).unwrap().into_owned();
    drop(bytes);
    assert_eq!(d, w);
    let part = &d.object.as_ref().unwrap().parts[&b"p0"[..]];
    assert_eq!(part.crc64, u64::MAX);
    assert_eq!(d.kind(), store::watch_event::Kind::Deleted);
    let bytes = g.to_vec().unwrap();
    assert_eq!(store::GetRequest::decode(&bytes).unwrap(), g);
}
