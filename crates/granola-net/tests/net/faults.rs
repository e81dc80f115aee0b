//! Short writes, partial reads and EAGAIN at every point: whatever the fault
//! parameters, frames arrive intact and in order.

use crate::common::*;
use granola::Message;
use granola_net::mem::{FaultInjector, Faults, MemPipe};
use granola_net::{RxBuffer, TxConfig, TxQueue};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Via {
    Object,
    Sga,
    Bytes,
}

fn faults() -> impl Strategy<Value = (Faults, Faults)> {
    let size = prop_oneof![
        Just(None),
        (1usize..64).prop_map(Some),
        (64usize..70_000).prop_map(Some),
    ];
    let every = prop_oneof![Just(None), (2u32..6).prop_map(Some)];
    (size.clone(), size, every.clone(), every).prop_map(|(ms, mr, sw, rw)| {
        (
            Faults {
                max_send: ms,
                send_would_block_every: sw,
                ..Faults::default()
            },
            Faults {
                max_recv: mr,
                recv_would_block_every: rw,
                ..Faults::default()
            },
        )
    })
}

fn messages() -> impl Strategy<Value = Vec<(usize, Vec<usize>, Via)>> {
    let len = prop_oneof![0usize..64, 0usize..2048, 2048usize..8000];
    let via = prop_oneof![Just(Via::Object), Just(Via::Sga), Just(Via::Bytes)];
    prop::collection::vec((len.clone(), prop::collection::vec(len, 0..5), via), 1..8)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn frames_arrive_intact_and_in_order(
        (sf, rf) in faults(),
        msgs in messages(),
        chunk in 64usize..8192,
        pipe in 1usize..100_000,
        rx_chunk in 64usize..10_000,
    ) {
        let pool = pool(64 << 20);
        let baseline = pool.stats();
        let specs: Vec<Spec> = msgs
            .iter()
            .enumerate()
            .map(|(i, (d, v, _))| Spec::new(i as u32, *d, v.clone()))
            .collect();
        let expected: Vec<Vec<u8>> = specs.iter().map(|s| s.frame_bytes(&pool, 3)).collect();
        let (a, b) = MemPipe::pair(pipe);
        let mut a = FaultInjector::new(a, sf);
        let mut b = FaultInjector::new(b, rf);
        let mut tx = TxQueue::new(
            pool.clone(),
            TxConfig { copy_threshold: THRESHOLD, chunk_size: chunk, ..TxConfig::default() },
        );
        {
            for ((s, (_, _, via)), want) in specs.iter().zip(&msgs).zip(&expected) {
                let values = s.values(&pool);
                let m = s.build(&values);
                match via {
                    Via::Object => tx.send_object(hdr(s.id), &m).unwrap(),
                    Via::Sga => tx.send_sga(hdr(s.id), &m.to_sga_with(THRESHOLD).unwrap()).unwrap(),
                    Via::Bytes => tx.send_bytes(hdr(s.id), &want[12..]).unwrap(),
                }
            }
        }
        let total: usize = expected.iter().map(Vec::len).sum();
        prop_assert_eq!(tx.queued_bytes(), total);
        let mut rx = RxBuffer::new(pool.clone(), rx_chunk, 1 << 20);
        let frames = pump(&mut tx, &mut a, &mut rx, &mut b, 1 << 20, specs.len(), 4 * total + 1000, || {});
        prop_assert_eq!(frames.len(), specs.len());
        for ((f, s), want) in frames.iter().zip(&specs).zip(&expected) {
            prop_assert_eq!(f.header.id, s.id);
            prop_assert_eq!(f.header.len as usize, want.len() - 12);
            prop_assert!(f.payload[..] == want[12..], "payload of {}", s.id);
        }
        prop_assert_eq!(tx.stats().bytes_sent as usize, total);
        prop_assert!(rx.data().is_empty());
        drop(frames);
        drop(rx);
        drop(tx);
        assert_no_leak(&pool, baseline);
    }
}
