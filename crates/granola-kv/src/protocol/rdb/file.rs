//! A whole RDB file, written in pieces as it is sent.

use super::*;
use crate::store::UseHistory;
use crc::{Crc, CRC_64_REDIS};

/// The checksum of a whole RDB file, kept as it is written.
static FILE_CRC64: Crc<u64> = Crc::<u64>::new(&CRC_64_REDIS);

const OPCODE_IDLE: u8 = 248;
const OPCODE_FREQ: u8 = 249;
const OPCODE_EXPIRETIME_MS: u8 = 252;
const OPCODE_SELECTDB: u8 = 254;
const OPCODE_EOF: u8 = 255;

/// An RDB file (version [`WRITE_VERSION`]) written in pieces, for a
/// transfer that cannot hold the whole file: each call appends to `out`
/// and adds what it appended to the file's checksum. The keys come from
/// DUMP payloads ([`Dump`]), whose type byte and value are the file's.
pub struct RdbFile {
    crc: crc::Digest<'static, u64>,
}

impl RdbFile {
    /// The file's header.
    pub fn start(out: &mut Vec<u8>) -> RdbFile {
        let mut f = RdbFile {
            crc: FILE_CRC64.digest(),
        };
        f.append(out, |o| {
            o.extend_from_slice(format!("REDIS{WRITE_VERSION:04}").as_bytes())
        });
        f
    }

    fn append(&mut self, out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
        let start = out.len();
        write(out);
        self.crc.update(&out[start..]);
    }

    /// The keys that follow are database `n`'s.
    pub fn select_db(&mut self, out: &mut Vec<u8>, n: u8) {
        self.append(out, |o| {
            o.push(OPCODE_SELECTDB);
            put_len(o, u64::from(n));
        });
    }

    /// One key: its expiry (Unix ms, 0 for none), its use (Redis writes
    /// the idle time under an LRU policy and the LFU counter under an LFU
    /// one, and a Redis loading the file keeps the one its own policy
    /// reads) and its value as a DUMP `payload` gives it (nothing is
    /// written for a payload too short to be one).
    pub fn key(
        &mut self,
        out: &mut Vec<u8>,
        key: &[u8],
        expires_at_ms: u64,
        history: Option<UseHistory>,
        payload: &[u8],
    ) {
        // Type byte, value, then the footer: 2 bytes of version, 8 of CRC.
        let Some((&kind, value)) = payload
            .get(..payload.len().saturating_sub(10))
            .and_then(|p| p.split_first())
        else {
            return;
        };
        self.append(out, |o| {
            if expires_at_ms != 0 {
                o.push(OPCODE_EXPIRETIME_MS);
                o.extend_from_slice(&expires_at_ms.to_le_bytes());
            }
            match history {
                Some(UseHistory::IdleSeconds(idle)) => {
                    o.push(OPCODE_IDLE);
                    put_len(o, idle);
                }
                Some(UseHistory::Frequency(counter)) => {
                    o.extend_from_slice(&[OPCODE_FREQ, counter])
                }
                None => {}
            }
            o.push(kind);
            put_len(o, key.len() as u64);
            o.extend_from_slice(key);
            o.extend_from_slice(value);
        });
    }

    /// The end of the file and its checksum.
    pub fn finish(mut self, out: &mut Vec<u8>) {
        self.append(out, |o| o.push(OPCODE_EOF));
        out.extend_from_slice(&self.crc.finalize().to_le_bytes());
    }
}
