//! The realistic corpus compiles (see `build.rs`) and round-trips: a
//! message of each API filled through the generated accessors, encoded,
//! decoded, compared, and read back through a view.

use granola::{Context, Decode, DecodeOptions, Message, Pool};
use granola_tests::corpus::pubsub::v1 as ps;
use granola_tests::corpus::store;

#[test]
fn pubsub_round_trips() {
    let pool = Pool::with_capacity(8 << 20).unwrap();
    let ctx = Context::new(&pool).with_copy_threshold(256);
    let payload = pool.alloc_copy(&[b'm'; 1000]).unwrap();
    let mut r = ps::StreamingPullResponse::new(&ctx);
    for i in 0..3 {
        let rm = r.append_received_messages();
        rm.set_ack_id(&format!("ack-{i}"));
        rm.set_delivery_attempt(i);
        let m = rm.mut_message();
        m.set_data(&payload); // referenced
        m.set_message_id(&i.to_string());
        let a = m.append_attributes();
        a.set_key("origin");
        a.set_value("test");
        m.mut_publish_time()
            .set_seconds(1_700_000_000 + i64::from(i));
    }
    let mut conf = ps::streaming_pull_response::AcknowledgeConfirmation::new(&ctx);
    conf.append_ack_ids("ack-0");
    r.set_acknowledge_confirmation(conf);
    assert_eq!(r.encoded_sizes().zero_copy_count, 3);
    let bytes = r.to_vec().unwrap();
    let rx = pool.alloc_copy(&bytes).unwrap();
    let d = ps::StreamingPullResponse::decode(&ctx, &rx).unwrap();
    assert_eq!(d, r);
    let opts = DecodeOptions::default();
    let v = ps::StreamingPullResponseView::new(&bytes, &opts).unwrap();
    let m1 = v.received_messages_get(1).unwrap().unwrap();
    assert_eq!(m1.ack_id().unwrap(), "ack-1");
    assert_eq!(m1.message().unwrap().unwrap().data().unwrap(), &payload[..]);

    let mut t = ps::Topic::new(&ctx);
    t.set_name("projects/p/topics/t");
    t.set_state(ps::topic::State::Active);
    t.mut_message_retention_duration().set_seconds(86_400);
    t.mut_message_storage_policy()
        .append_allowed_persistence_regions("eu");
    let rx = pool.alloc_copy(&t.to_vec().unwrap()).unwrap();
    assert_eq!(ps::Topic::decode(&ctx, &rx).unwrap(), t);
}

#[test]
fn store_round_trips() {
    let pool = Pool::with_capacity(8 << 20).unwrap();
    let ctx = Context::new(&pool);
    let mut o = store::Object::new(&ctx);
    o.set_bucket("b");
    o.set_key("k");
    o.set_generation(-1);
    o.set_content(b"hello");
    o.set_storage_class(store::object::StorageClass::Nearline);
    let p = o.append_parts();
    p.set_key("p0");
    p.mut_value().set_crc64(u64::MAX);
    p.mut_value().set_chunk(b"c");
    let f = o.mut_metadata().append_fields();
    f.set_key("owner");
    f.mut_value().set_string_value("me");
    o.mut_size_limit().set_value(1 << 40);
    let any = o.append_details();
    any.set_type_url("type.googleapis.com/corpus.store.Object");
    any.set_value(b"\x00");
    let mut g = store::GetRequest::new(&ctx);
    g.set_bucket("b");
    let mut since = granola_tests::google::protobuf::Timestamp::new(&ctx);
    since.set_seconds(5);
    g.set_if_modified_since(since);
    let mut w = store::WatchEvent::new(&ctx);
    w.set_kind(store::watch_event::Kind::Deleted);
    w.set_object(o);
    w.set_revision(-7);
    let rx = pool.alloc_copy(&w.to_vec().unwrap()).unwrap();
    let d = store::WatchEvent::decode(&ctx, &rx).unwrap();
    assert_eq!(d, w);
    assert_eq!(
        d.get_object().unwrap().get_parts()[0]
            .get_value()
            .unwrap()
            .get_crc64(),
        u64::MAX
    );
    let rx = pool.alloc_copy(&g.to_vec().unwrap()).unwrap();
    assert_eq!(store::GetRequest::decode(&ctx, &rx).unwrap(), g);
}
