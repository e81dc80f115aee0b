//! Claiming a port before the workers share it.
//!
//! Every worker thread binds its own `SO_REUSEPORT` socket per address so
//! the kernel spreads connections over them. But `SO_REUSEPORT` lets any
//! process of the same user join the group, so a second server started on
//! the same port would silently get half of the clients. [`claim`] first
//! binds the address *without* `SO_REUSEPORT`: that fails with "address
//! already in use" when anyone already holds the port (listening TCP
//! socket, bound UDP socket), and otherwise resolves port 0 to a concrete
//! port. The probe is closed and the workers' group binds the port right
//! after; the window between the two is microseconds, and a process that
//! squeezes into it binds a port this server already announced (its log
//! line), a race the operator can see — no silent split in the normal case
//! of starting a second instance by mistake. TCP port 0 skips the probe:
//! the server's first listener binds it and holds the port the kernel
//! picked (see `Server::start`), so no client's connect can take it in
//! between.

use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::SocketAddr;

/// Transport of a port to claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// TCP (listening).
    Tcp,
    /// UDP.
    Udp,
}

/// Checks that no one serves `addr` and resolves port 0: binds a probe
/// socket without `SO_REUSEPORT` and returns the address it got. The error
/// for a port in use says so and names the address.
pub fn claim(addr: SocketAddr, transport: Transport) -> io::Result<SocketAddr> {
    let (ty, proto) = match transport {
        Transport::Tcp => (Type::STREAM, Protocol::TCP),
        Transport::Udp => (Type::DGRAM, Protocol::UDP),
    };
    let s = Socket::new(Domain::for_address(addr), ty, Some(proto))?;
    if transport == Transport::Tcp {
        // Lets the probe (and the server) bind over connections of an
        // earlier run still in TIME_WAIT, but never over a listening
        // socket. (For UDP the option would let it join any bound socket.)
        s.set_reuse_address(true)?;
    }
    match s.bind(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
            let what = match transport {
                Transport::Tcp => "tcp",
                Transport::Udp => "udp",
            };
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("{what} {addr}: address already in use (another process serves this port)"),
            ));
        }
        Err(e) => return Err(e),
    }
    if transport == Transport::Tcp {
        // A bound-but-not-listening TCP socket does not conflict with a
        // listener elsewhere in every case; listening makes the check the
        // same as the real server's.
        s.listen(1)?;
    }
    s.local_addr()?
        .as_socket()
        .ok_or_else(|| io::Error::other("probe socket has no inet address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_served_port_is_refused_and_a_free_one_resolved() {
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let got = claim(any, Transport::Tcp).unwrap();
        assert_ne!(got.port(), 0);
        // Someone listens with SO_REUSEPORT (as a granola server does).
        let l = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
        l.set_reuse_address(true).unwrap();
        l.set_reuse_port(true).unwrap();
        l.bind(&any.into()).unwrap();
        l.listen(8).unwrap();
        let held = l.local_addr().unwrap().as_socket().unwrap();
        let e = claim(held, Transport::Tcp).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
        assert!(e.to_string().contains("address already in use"), "{e}");
        // UDP likewise.
        let u = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).unwrap();
        u.set_reuse_port(true).unwrap();
        u.bind(&any.into()).unwrap();
        let uheld = u.local_addr().unwrap().as_socket().unwrap();
        let e = claim(uheld, Transport::Udp).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
        drop((l, u));
        assert_eq!(claim(held, Transport::Tcp).unwrap(), held, "free again");
    }
}
