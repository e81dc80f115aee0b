use granola::{Context, Decode, Message, Pool};
use granola_tests::sample::Sample;

#[test]
fn round_trip_smoke() {
    let pool = Pool::with_capacity(16 << 20).unwrap();
    let ctx = Context::new(&pool).with_copy_threshold(512);
    let big = pool.alloc_copy(&[9u8; 2048]).unwrap();
    let mut m = Sample::new(&ctx);
    m.set_id(7);
    m.set_name("hello");
    m.set_data(&big);
    m.append_vals(b"small");
    m.append_vals(&big[..1024]);
    m.append_keys("k1");
    m.append_nums(-3);
    m.mut_inner().set_a(42);
    m.append_items().set_payload(b"p");
    m.set_flag(true);
    m.set_ratio(0.5);
    assert_eq!(big.ref_count(), 3);
    let sizes = m.encoded_sizes();
    assert_eq!(sizes.zero_copy_count, 2);
    let v = m.to_vec().unwrap();
    let sga = m.to_sga().unwrap();
    assert_eq!(sga.to_vec(), v);
    let rx = pool.alloc_copy(&v).unwrap();
    let d = Sample::decode(&ctx, &rx).unwrap();
    assert_eq!(d, m);
    assert_eq!(d.get_name().unwrap(), "hello");
    assert!(d.data_field().unwrap().is_zero_copy());
    drop(sga);
    drop(m);
    assert_eq!(big.ref_count(), 1);
}
