//! The XDP program that steers the server's UDP ports to the AF_XDP socket,
//! written as eBPF instructions in code.
//!
//! Why in code rather than aya or libxdp: the program is about 30
//! instructions (match IPv4 without options, UDP, one of the ports;
//! `bpf_redirect_map(xsks, rx_queue_index, XDP_PASS)`), so building it needs
//! neither clang nor a BPF target at build time, nor a loader library — the
//! bpf() syscall loads it and a bpf link attaches it (and detaches it when
//! the worker exits, even if the process dies). Everything else passes to
//! the kernel stack untouched (ARP, TCP, other ports).
//!
//! **IPv4 fragments of UDP** go to the socket too when the caller asks
//! (`steer_fragments`: the server, which reassembles them; see
//! `reassembly.rs`), else to the kernel (the load generator's client, which
//! reads its large replies from kernel sockets). Only the first fragment
//! carries the UDP header, so the program cannot tell which port the others
//! are for: with fragment steering, every fragmented UDP datagram arriving
//! on the socket's queue is the AF_XDP worker's, and one for another port
//! is dropped after reassembly (counted) rather than reaching the kernel.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

// Opcodes (linux/bpf.h, bpf_common.h).
const LDX_W: u8 = 0x61;
const LDX_H: u8 = 0x69;
const LDX_B: u8 = 0x71;
const MOV64_X: u8 = 0xbf;
const MOV64_K: u8 = 0xb7;
const ADD64_K: u8 = 0x07;
const AND64_K: u8 = 0x57;
const JGT_X: u8 = 0x2d;
const JNE_K: u8 = 0x55;
const JEQ_K: u8 = 0x15;
const JA: u8 = 0x05;
const CALL: u8 = 0x85;
const EXIT: u8 = 0x95;
const LD_DW: u8 = 0x18;
const PSEUDO_MAP_FD: u8 = 1;
const FN_REDIRECT_MAP: i32 = 51;
const XDP_PASS: i32 = 2;

fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> u64 {
    code as u64
        | ((dst | (src << 4)) as u64) << 8
        | (off as u16 as u64) << 16
        | (imm as u32 as u64) << 32
}

/// Where a jump goes.
#[derive(Clone, Copy)]
enum Target {
    Pass,
    Redirect,
}

/// The instructions for `ports`, with `map_fd` the XSKMAP; IPv4 fragments
/// of UDP are redirected too when `steer_fragments`.
pub(crate) fn assemble(ports: &[u16], map_fd: i32, steer_fragments: bool) -> Vec<u64> {
    let mut code: Vec<u64> = Vec::new();
    let mut jumps: Vec<(usize, Target)> = Vec::new();
    let mut jump = |code: &mut Vec<u64>, op: u8, dst: u8, src: u8, imm: i32, t: Target| {
        jumps.push((code.len(), t));
        code.push(insn(op, dst, src, 0, imm));
    };
    code.push(insn(MOV64_X, 6, 1, 0, 0)); // r6 = ctx
    code.push(insn(LDX_W, 2, 1, 0, 0)); // r2 = ctx->data
    code.push(insn(LDX_W, 3, 1, 4, 0)); // r3 = ctx->data_end
    code.push(insn(MOV64_X, 4, 2, 0, 0));
    code.push(insn(ADD64_K, 4, 0, 0, 34)); // eth 14 + ip 20
    jump(&mut code, JGT_X, 4, 3, 0, Target::Pass);
    code.push(insn(LDX_H, 5, 2, 12, 0)); // ethertype (network order)
    jump(&mut code, JNE_K, 5, 0, 0x0008, Target::Pass);
    code.push(insn(LDX_B, 5, 2, 14, 0)); // version 4, IHL 5
    jump(&mut code, JNE_K, 5, 0, 0x45, Target::Pass);
    code.push(insn(LDX_B, 5, 2, 23, 0)); // protocol
    jump(&mut code, JNE_K, 5, 0, 17, Target::Pass);
    code.push(insn(LDX_H, 5, 2, 20, 0)); // flags + fragment offset
    code.push(insn(AND64_K, 5, 0, 0, 0xff3f)); // MF and offset, not DF
    let fragment = if steer_fragments {
        Target::Redirect
    } else {
        Target::Pass
    };
    jump(&mut code, JNE_K, 5, 0, 0, fragment);
    // Not a fragment: the UDP header is there (a fragment's last piece
    // may be shorter than one, hence the second bounds check).
    code.push(insn(MOV64_X, 4, 2, 0, 0));
    code.push(insn(ADD64_K, 4, 0, 0, 42)); // + udp 8
    jump(&mut code, JGT_X, 4, 3, 0, Target::Pass);
    code.push(insn(LDX_H, 5, 2, 36, 0)); // UDP destination port
    for &p in ports {
        jump(
            &mut code,
            JEQ_K,
            5,
            0,
            p.swap_bytes() as i32,
            Target::Redirect,
        );
    }
    jump(&mut code, JA, 0, 0, 0, Target::Pass);
    let redirect = code.len();
    code.push(insn(LDX_W, 2, 6, 16, 0)); // key = ctx->rx_queue_index
    code.push(insn(LD_DW, 1, PSEUDO_MAP_FD, 0, map_fd));
    code.push(0);
    code.push(insn(MOV64_K, 3, 0, 0, XDP_PASS)); // no socket: pass
    code.push(insn(CALL, 0, 0, 0, FN_REDIRECT_MAP));
    code.push(insn(EXIT, 0, 0, 0, 0));
    let pass = code.len();
    code.push(insn(MOV64_K, 0, 0, 0, XDP_PASS));
    code.push(insn(EXIT, 0, 0, 0, 0));
    for (at, t) in jumps {
        let to = match t {
            Target::Pass => pass,
            Target::Redirect => redirect,
        };
        let off = (to as i64 - at as i64 - 1) as i16;
        code[at] = (code[at] & !(0xffff << 16)) | ((off as u16 as u64) << 16);
    }
    code
}

/// A loaded program and its map, attached to an interface while alive.
pub(crate) struct Steering {
    pub(crate) map: OwnedFd,
    _prog: OwnedFd,
    _link: OwnedFd,
    /// "driver" (native XDP) or "generic" (skb mode).
    pub(crate) attach: &'static str,
}

impl Steering {
    /// Creates the XSKMAP, loads the program for `ports` (and UDP
    /// fragments when `steer_fragments`) and attaches it to `ifindex`
    /// (native mode first, then generic; only generic when `generic`).
    pub(crate) fn attach(
        ifindex: u32,
        queues: u32,
        ports: &[u16],
        steer_fragments: bool,
        generic: bool,
    ) -> io::Result<Steering> {
        let map = super::sys::xskmap_create(queues)?;
        let insns = assemble(ports, map.as_raw_fd(), steer_fragments);
        let prog = super::sys::xdp_prog_load(&insns, "granola_xsk")?;
        const XDP_FLAGS_SKB_MODE: u32 = 2;
        const XDP_FLAGS_DRV_MODE: u32 = 4;
        let (link, attach) = match super::sys::xdp_link_create(
            prog.as_fd(),
            ifindex,
            if generic {
                XDP_FLAGS_SKB_MODE
            } else {
                XDP_FLAGS_DRV_MODE
            },
        ) {
            Ok(l) => (l, if generic { "generic" } else { "driver" }),
            Err(_) => (
                super::sys::xdp_link_create(prog.as_fd(), ifindex, XDP_FLAGS_SKB_MODE)?,
                "generic",
            ),
        };
        Ok(Steering {
            map,
            _prog: prog,
            _link: link,
            attach,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jumps_land_on_pass_and_redirect() {
        for steer in [false, true] {
            let code = assemble(&[11211, 11311], 7, steer);
            let pass = code.len() - 2;
            let redirect = pass - 6;
            let mut to_redirect = 0;
            for (i, w) in code.iter().enumerate() {
                let op = (*w & 0xff) as u8;
                if [JGT_X, JNE_K, JEQ_K, JA].contains(&op) {
                    let off = ((*w >> 16) & 0xffff) as u16 as i16;
                    let to = (i as i64 + 1 + off as i64) as usize;
                    assert!(to == pass || to == redirect, "insn {i} jumps to {to}");
                    if op == JEQ_K {
                        assert_eq!(to, redirect);
                    }
                    to_redirect += usize::from(to == redirect);
                }
            }
            // The two ports, and the fragment test when steering them.
            assert_eq!(to_redirect, 2 + usize::from(steer));
            assert_eq!((code[redirect + 1] >> 32) as i32, 7, "map fd in ld_imm64");
            assert_eq!(code.last().map(|w| (w & 0xff) as u8), Some(EXIT));
        }
    }
}
