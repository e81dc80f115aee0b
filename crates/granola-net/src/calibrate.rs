//! Measures the copy threshold on this machine (Cornflakes §5's method,
//! automated; the paper lists its static threshold as a limitation).
//!
//! For each piece size, messages of [`PIECES`] cold pieces go over a TCP
//! loopback connection two ways, interleaved and repeated: copied into the
//! TX chunk (one iovec) and gathered (one iovec per piece, prefetched as the
//! datapath does). A receiver thread on the other end drains the bytes. The
//! threshold is the smallest piece size from which gathering is at least as
//! fast as copying for every larger size measured.
//!
//! It takes about a second; [`Calibration::threshold`] is what to put in
//! [`TxConfig::copy_threshold`](crate::TxConfig::copy_threshold) and the
//! threshold given to `granola::Message::encoded_sizes_with`.

use crate::datapath::TcpDatapath;
use crate::tx::{Flushed, Prefetch, TxConfig, TxQueue};
use granola::{Buf, Pool};
use std::io::{self, Read};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Pieces per message.
pub const PIECES: usize = 8;

/// Piece sizes measured.
pub const SIZES: [usize; 8] = [64, 128, 256, 512, 1024, 2048, 4096, 8192];

/// One row of the measurement.
#[derive(Clone, Copy, Debug)]
pub struct CalibrationRow {
    /// Piece size in bytes.
    pub piece: usize,
    /// Median ns per message when copying.
    pub copy_ns: f64,
    /// Median ns per message when gathering.
    pub gather_ns: f64,
}

/// The result: a recommended threshold and the measurements behind it.
#[derive(Clone, Debug)]
pub struct Calibration {
    /// Recommended copy threshold in bytes.
    pub threshold: usize,
    /// The measurements.
    pub rows: Vec<CalibrationRow>,
}

/// Settings of a calibration run.
#[derive(Clone, Copy, Debug)]
pub struct CalibrationConfig {
    /// Messages per measurement.
    pub messages: usize,
    /// Repetitions (medians are taken).
    pub reps: usize,
    /// Bytes of pool memory the pieces are spread over (larger than the
    /// last-level cache, so they are cold as in a server).
    pub spread: usize,
    /// Give up after this long.
    pub time_limit: Duration,
}

impl Default for CalibrationConfig {
    fn default() -> Self {
        CalibrationConfig {
            messages: 2000,
            reps: 3,
            spread: 128 << 20,
            time_limit: Duration::from_secs(20),
        }
    }
}

fn drain(mut s: TcpStream) {
    let mut buf = vec![0u8; 1 << 20];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
    }
}

/// Runs the measurement on TCP loopback and returns the threshold.
pub fn calibrate(pool: &Pool, cfg: CalibrationConfig) -> io::Result<Calibration> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let client = TcpStream::connect(addr)?;
    let (server, _) = listener.accept()?;
    let receiver = std::thread::spawn(move || drain(server));
    let mut dp = TcpDatapath::new(client)?;
    let deadline = Instant::now() + cfg.time_limit;
    let mut rows = Vec::new();
    for &piece in &SIZES {
        // Pieces spread over `spread` bytes: many distinct slots, visited
        // round-robin, so each message touches cold memory.
        let count = (cfg.spread / piece.max(64)).clamp(PIECES, 1 << 16);
        let mut pieces: Vec<Buf> = Vec::with_capacity(count);
        for i in 0..count {
            let Some(mut b) = pool.alloc(piece) else {
                break;
            };
            b.set_len(piece);
            b.as_mut_slice().fill(i as u8);
            pieces.push(b.freeze());
        }
        if pieces.len() < PIECES {
            return Err(io::Error::new(
                io::ErrorKind::OutOfMemory,
                "pool too small to calibrate",
            ));
        }
        let mut copy = Vec::new();
        let mut gather = Vec::new();
        let mut cursor = 0usize;
        for _ in 0..cfg.reps {
            for mode_copy in [true, false] {
                let mut tx = TxQueue::new(
                    pool.clone(),
                    TxConfig {
                        copy_threshold: if mode_copy { usize::MAX } else { 0 },
                        prefetch: Prefetch::Lines(2),
                        ..TxConfig::default()
                    },
                );
                let start = Instant::now();
                for _ in 0..cfg.messages {
                    tx.copy(&[0u8; 16])
                        .map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, e))?;
                    for _ in 0..PIECES {
                        let p = &pieces[cursor % pieces.len()];
                        cursor = cursor.wrapping_add(7919);
                        tx.value(p)
                            .map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, e))?;
                    }
                    while tx.flush(&mut dp)? == Flushed::Blocked {
                        if Instant::now() > deadline {
                            return Err(io::Error::new(
                                io::ErrorKind::TimedOut,
                                "calibration timed out",
                            ));
                        }
                        std::thread::yield_now();
                    }
                }
                let ns = start.elapsed().as_nanos() as f64 / cfg.messages as f64;
                if mode_copy {
                    copy.push(ns)
                } else {
                    gather.push(ns)
                }
            }
        }
        rows.push(CalibrationRow {
            piece,
            copy_ns: median(&mut copy),
            gather_ns: median(&mut gather),
        });
    }
    drop(dp);
    let _ = receiver.join();
    Ok(Calibration {
        threshold: threshold_from(&rows),
        rows,
    })
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The smallest piece size from which gathering is no slower than copying
/// for every larger size (the last size if copying always wins: then
/// twice it).
pub fn threshold_from(rows: &[CalibrationRow]) -> usize {
    let mut threshold = rows
        .last()
        .map_or(crate::tx::DEFAULT_COPY_THRESHOLD, |r| r.piece * 2);
    for r in rows.iter().rev() {
        if r.gather_ns <= r.copy_ns {
            threshold = r.piece;
        } else {
            break;
        }
    }
    threshold
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(piece: usize, copy_ns: f64, gather_ns: f64) -> CalibrationRow {
        CalibrationRow {
            piece,
            copy_ns,
            gather_ns,
        }
    }

    #[test]
    fn threshold_is_start_of_the_winning_tail() {
        let rows = [
            row(64, 10.0, 20.0),
            row(512, 10.0, 9.0),
            row(1024, 30.0, 40.0),
            row(2048, 50.0, 40.0),
            row(4096, 90.0, 50.0),
        ];
        assert_eq!(threshold_from(&rows), 2048);
        let never = [row(64, 1.0, 2.0), row(128, 1.0, 2.0)];
        assert_eq!(threshold_from(&never), 256);
        let always = [row(64, 3.0, 2.0), row(128, 3.0, 2.0)];
        assert_eq!(threshold_from(&always), 64);
    }

    #[test]
    fn calibration_runs_and_reports_every_size() {
        let pool = Pool::with_capacity(256 << 20).unwrap();
        let cal = calibrate(
            &pool,
            CalibrationConfig {
                messages: 50,
                reps: 1,
                spread: 1 << 20,
                time_limit: Duration::from_secs(30),
            },
        )
        .unwrap();
        assert_eq!(cal.rows.len(), SIZES.len());
        assert!(cal
            .rows
            .iter()
            .all(|r| r.copy_ns > 0.0 && r.gather_ns > 0.0));
        assert!(SIZES.contains(&cal.threshold) || cal.threshold == SIZES[SIZES.len() - 1] * 2);
    }
}
