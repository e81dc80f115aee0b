//! Counters and latency summaries of a run.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Why a request failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A value with a wrong byte.
    WrongValue,
    /// A value (or list, or count) of the wrong length.
    WrongLength,
    /// A value for a key that was not asked for.
    WrongKey,
    /// The server reported an error.
    ServerError,
    /// A well-formed reply of the wrong type.
    Unexpected,
    /// A native payload that does not decode.
    Malformed,
    /// Unparseable stream data: the connection was closed.
    Protocol,
    /// Not sent: too many requests outstanding on the connection.
    Overflow,
    /// The command has no form in this protocol.
    Unsupported,
    /// The connection failed or was closed by the server.
    Connection,
    /// UDP response datagrams out of order (reassembly gave up).
    Reassembly,
}

impl ErrorKind {
    /// All kinds, in report order.
    pub const ALL: [ErrorKind; 11] = [
        ErrorKind::WrongValue,
        ErrorKind::WrongLength,
        ErrorKind::WrongKey,
        ErrorKind::ServerError,
        ErrorKind::Unexpected,
        ErrorKind::Malformed,
        ErrorKind::Protocol,
        ErrorKind::Overflow,
        ErrorKind::Unsupported,
        ErrorKind::Connection,
        ErrorKind::Reassembly,
    ];

    /// Snake-case name.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::WrongValue => "wrong_value",
            ErrorKind::WrongLength => "wrong_length",
            ErrorKind::WrongKey => "wrong_key",
            ErrorKind::ServerError => "server_error",
            ErrorKind::Unexpected => "unexpected",
            ErrorKind::Malformed => "malformed",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Overflow => "overflow",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Connection => "connection",
            ErrorKind::Reassembly => "reassembly",
        }
    }
}

/// Counts of one phase (warm-up or measurement).
///
/// Ops are workload arrivals; requests are wire requests (an op may have
/// several). Every request ends in exactly one of: a response (ok, miss or
/// an error kind), a timeout, or a send-side error.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Ops scheduled (open loop) or issued (closed loop).
    pub ops: u64,
    /// Ops whose every request got a correct response (hits).
    pub ops_ok: u64,
    /// Ops with at least one miss and no error or timeout.
    pub ops_miss: u64,
    /// Ops with at least one error (and no timeout).
    pub ops_error: u64,
    /// Ops with at least one request timed out.
    pub ops_timeout: u64,
    /// Wire requests sent.
    pub requests: u64,
    /// Requests answered correctly.
    pub req_ok: u64,
    /// Requests answered "not found" (well-formed).
    pub req_miss: u64,
    /// Requests that passed their deadline.
    pub req_timeout: u64,
    /// Responses that arrived after their request timed out (also counted
    /// as timeouts; their contents are still checked).
    pub late: u64,
    /// Requests failed, by kind.
    pub errors: ErrorCounts,
}

/// Error counts by [`ErrorKind`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ErrorCounts {
    /// Wrong bytes.
    pub wrong_value: u64,
    /// Wrong lengths.
    pub wrong_length: u64,
    /// Wrong keys.
    pub wrong_key: u64,
    /// Server errors.
    pub server_error: u64,
    /// Unexpected replies.
    pub unexpected: u64,
    /// Undecodable native payloads.
    pub malformed: u64,
    /// Unparseable streams.
    pub protocol: u64,
    /// Not sent: too many outstanding.
    pub overflow: u64,
    /// Unsupported commands.
    pub unsupported: u64,
    /// Connection failures.
    pub connection: u64,
    /// UDP reassembly failures.
    pub reassembly: u64,
}

impl ErrorCounts {
    /// The counter for `k`.
    pub fn get_mut(&mut self, k: ErrorKind) -> &mut u64 {
        match k {
            ErrorKind::WrongValue => &mut self.wrong_value,
            ErrorKind::WrongLength => &mut self.wrong_length,
            ErrorKind::WrongKey => &mut self.wrong_key,
            ErrorKind::ServerError => &mut self.server_error,
            ErrorKind::Unexpected => &mut self.unexpected,
            ErrorKind::Malformed => &mut self.malformed,
            ErrorKind::Protocol => &mut self.protocol,
            ErrorKind::Overflow => &mut self.overflow,
            ErrorKind::Unsupported => &mut self.unsupported,
            ErrorKind::Connection => &mut self.connection,
            ErrorKind::Reassembly => &mut self.reassembly,
        }
    }

    /// The count for `k`.
    pub fn get(&self, k: ErrorKind) -> u64 {
        match k {
            ErrorKind::WrongValue => self.wrong_value,
            ErrorKind::WrongLength => self.wrong_length,
            ErrorKind::WrongKey => self.wrong_key,
            ErrorKind::ServerError => self.server_error,
            ErrorKind::Unexpected => self.unexpected,
            ErrorKind::Malformed => self.malformed,
            ErrorKind::Protocol => self.protocol,
            ErrorKind::Overflow => self.overflow,
            ErrorKind::Unsupported => self.unsupported,
            ErrorKind::Connection => self.connection,
            ErrorKind::Reassembly => self.reassembly,
        }
    }

    /// All errors.
    pub fn total(&self) -> u64 {
        ErrorKind::ALL.iter().map(|&k| self.get(k)).sum()
    }

    fn add(&mut self, o: &ErrorCounts) {
        for k in ErrorKind::ALL {
            *self.get_mut(k) += o.get(k);
        }
    }
}

impl Counts {
    /// Adds `o` into `self`.
    pub fn add(&mut self, o: &Counts) {
        self.ops += o.ops;
        self.ops_ok += o.ops_ok;
        self.ops_miss += o.ops_miss;
        self.ops_error += o.ops_error;
        self.ops_timeout += o.ops_timeout;
        self.requests += o.requests;
        self.req_ok += o.req_ok;
        self.req_miss += o.req_miss;
        self.req_timeout += o.req_timeout;
        self.late += o.late;
        self.errors.add(&o.errors);
    }

    /// Ops completed with correct responses (hits or misses).
    pub fn ops_good(&self) -> u64 {
        self.ops_ok + self.ops_miss
    }

    /// Failed requests (errors + timeouts).
    pub fn failures(&self) -> u64 {
        self.errors.total() + self.req_timeout
    }
}

/// Latency percentiles in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Ops recorded.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
}

/// A latency histogram in nanoseconds, 1 ns … 100 s, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid histogram bounds")
}

impl Latency {
    /// Summary of a nanosecond histogram.
    pub fn of(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Latency {
            count: h.len(),
            mean: h.mean() / 1000.0,
            p50: us(h.value_at_quantile(0.5)),
            p90: us(h.value_at_quantile(0.9)),
            p99: us(h.value_at_quantile(0.99)),
            p999: us(h.value_at_quantile(0.999)),
            max: us(h.max()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_in_microseconds() {
        let mut h = new_histogram();
        for i in 1..=1000u64 {
            h.record(i * 1000).unwrap();
        }
        let l = Latency::of(&h);
        assert_eq!(l.count, 1000);
        assert!((l.p50 - 500.0).abs() < 1.0, "{l:?}");
        assert!((l.p99 - 990.0).abs() < 1.0, "{l:?}");
        assert!((l.mean - 500.5).abs() < 1.0, "{l:?}");
        let mut c = Counts::default();
        *c.errors.get_mut(ErrorKind::WrongValue) += 2;
        c.req_timeout = 1;
        let mut d = Counts::default();
        d.add(&c);
        d.add(&c);
        assert_eq!(d.errors.wrong_value, 4);
        assert_eq!(d.failures(), 6);
    }
}
