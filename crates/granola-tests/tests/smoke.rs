use granola::{Decode, DecodeOptions, IntoOwned, Message, Pool};
use granola_tests::sample::{Inner, Sample};

#[test]
fn round_trip_smoke() {
    let pool = Pool::with_capacity(16 << 20).unwrap();
    let big = pool.alloc_copy(&[9u8; 2048]).unwrap();
    let m = granola_tests::sample::smoke(&big);
    assert_eq!(big.ref_count(), 3);
    let sizes = m.encoded_sizes_with(512);
    assert_eq!(sizes.zero_copy_count(), 2);
    let v = m.to_vec().unwrap();
    let sga = m.to_sga_with(512).unwrap();
    assert_eq!(sga.to_vec(), v);
    let rx = pool.alloc_copy(&v).unwrap();
    let d = Sample::decode_buf_with(&rx, &DecodeOptions::default(), 512).unwrap();
    assert_eq!(d, m);
    assert_eq!(d.name.as_str().unwrap(), "hello");
    assert!(d.data.is_shared());
    // Borrowed decode, then detached: equal, and no longer tied to `v`.
    let owned = Sample::decode(&v).unwrap().into_owned();
    drop(v);
    assert_eq!(owned, m);
    drop(sga);
    drop(m);
    assert_eq!(big.ref_count(), 1);
}

/// The ownership model: messages can be returned from the function that
/// decoded them, sent to other threads, shared, cloned and defaulted.
#[test]
fn owned_messages_are_send_sync_clone_default() {
    fn assert_traits<T: Send + Sync + Clone + Default + 'static>() {}
    assert_traits::<Sample<'static>>();
    assert_traits::<Inner<'static>>();

    fn decode_and_return(bytes: &[u8]) -> Sample<'static> {
        Sample::decode(bytes).unwrap().into_owned()
    }
    let wire = Sample {
        id: 3,
        name: "x".into(),
        ..Default::default()
    }
    .to_vec()
    .unwrap();
    let m = decode_and_return(&wire);
    let copy = m.clone();
    let from_thread = std::thread::spawn(move || m.name.as_str().unwrap().to_owned())
        .join()
        .unwrap();
    assert_eq!(from_thread, "x");
    assert_eq!(copy.id, 3);
}
