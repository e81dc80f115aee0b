//! The native protocol's requests: what each does to the store, once for
//! every serializer (granola's own in `server::native`, the baselines in
//! `server::baselines`), so they differ only in how requests and replies
//! are encoded.

use crate::command::Storage;
use crate::store::{Kind, Meta, SetMode, StoreError};
use granola::Buf;

/// Request kinds (the frame header's `kind`).
pub mod kind {
    /// GetReq → GetResp
    pub const GET: u16 = 1;
    /// PutReq → Ack
    pub const PUT: u16 = 2;
    /// GetMReq → GetMResp
    pub const GET_M: u16 = 3;
    /// PutMReq → Ack
    pub const PUT_M: u16 = 4;
    /// GetListReq → GetListResp
    pub const GET_LIST: u16 = 5;
    /// PutListReq → Ack
    pub const PUT_LIST: u16 = 6;
    /// AppendToListReq → Ack
    pub const APPEND_TO_LIST: u16 = 7;
    /// GetFromListReq → GetResp
    pub const GET_FROM_LIST: u16 = 8;
    /// DeleteReq → Ack
    pub const DELETE: u16 = 9;
}

/// Response status codes (see kv.proto).
pub mod status {
    /// Success.
    pub const OK: u32 = 0;
    /// No such key (or list index).
    pub const NOT_FOUND: u32 = 1;
    /// The key holds the other kind of value.
    pub const WRONG_TYPE: u32 = 2;
    /// Key or value above the limits.
    pub const TOO_LARGE: u32 = 3;
    /// The store could not make room.
    pub const OUT_OF_MEMORY: u32 = 4;
    /// The request could not be decoded or is inconsistent.
    pub const BAD_REQUEST: u32 = 5;
    /// A conditional write did not apply.
    pub const NOT_STORED: u32 = 6;
}

/// The status code of a store error (also used by `baselines`).
pub fn status_of(e: StoreError) -> u32 {
    match e {
        StoreError::NotFound => status::NOT_FOUND,
        StoreError::WrongType => status::WRONG_TYPE,
        StoreError::TooLarge | StoreError::ListTooLong => status::TOO_LARGE,
        StoreError::OutOfMemory => status::OUT_OF_MEMORY,
        StoreError::NotNumeric => status::BAD_REQUEST,
        StoreError::NotStored | StoreError::Exists => status::NOT_STORED,
    }
}

/// A native request, decoded (server) or to encode (client). Slices borrow
/// the payload or the codec's scratch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request<'a> {
    /// [`kind::GET`]: the value of a string key.
    Get {
        /// Key.
        key: &'a [u8],
    },
    /// [`kind::PUT`]: store a string value.
    Put {
        /// Key.
        key: &'a [u8],
        /// Value.
        value: &'a [u8],
    },
    /// [`kind::GET_M`]: one value per key.
    GetM {
        /// Keys, in reply order.
        keys: &'a [&'a [u8]],
    },
    /// [`kind::PUT_M`]: `keys[i]` gets `values[i]` (equal lengths).
    PutM {
        /// Keys.
        keys: &'a [&'a [u8]],
        /// Values.
        values: &'a [&'a [u8]],
    },
    /// [`kind::GET_LIST`]: elements `start..=end` (Redis LRANGE indexing), or
    /// all of them.
    GetList {
        /// Key.
        key: &'a [u8],
        /// First index (negative counts from the end).
        start: i64,
        /// Last index, inclusive.
        end: i64,
        /// Ignore `start`/`end`, return every element.
        all: bool,
    },
    /// [`kind::PUT_LIST`]: replace the key with this list.
    PutList {
        /// Key.
        key: &'a [u8],
        /// Elements.
        values: &'a [&'a [u8]],
    },
    /// [`kind::APPEND_TO_LIST`]: append one element.
    AppendToList {
        /// Key.
        key: &'a [u8],
        /// Element.
        value: &'a [u8],
    },
    /// [`kind::GET_FROM_LIST`]: one element (negative index from the end).
    GetFromList {
        /// Key.
        key: &'a [u8],
        /// Index.
        index: i64,
    },
    /// [`kind::DELETE`]: remove a key.
    Delete {
        /// Key.
        key: &'a [u8],
    },
}

impl Request<'_> {
    /// The frame kind of this request.
    pub fn kind(&self) -> u16 {
        match self {
            Request::Get { .. } => kind::GET,
            Request::Put { .. } => kind::PUT,
            Request::GetM { .. } => kind::GET_M,
            Request::PutM { .. } => kind::PUT_M,
            Request::GetList { .. } => kind::GET_LIST,
            Request::PutList { .. } => kind::PUT_LIST,
            Request::AppendToList { .. } => kind::APPEND_TO_LIST,
            Request::GetFromList { .. } => kind::GET_FROM_LIST,
            Request::Delete { .. } => kind::DELETE,
        }
    }
}

/// A native response: the server builds it with `V =` [`Buf`] (stored
/// values), a client decodes it with `V = &[u8]` (borrowing the payload or
/// the codec).
///
/// A request that could not be decoded (or of an unknown kind), and over
/// UDP a reply too large for a datagram, is answered with an `Ack`
/// whatever the kind; every response message has its status first, so
/// decoding it as the expected message still yields that status (and no
/// values).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response<V> {
    /// `GetResp` (Get, GetFromList); the value is present iff the status is
    /// OK.
    Value {
        /// Status code.
        status: u32,
        /// The value.
        value: Option<V>,
    },
    /// `GetMResp`: one entry per requested key, `None` for a miss.
    Values {
        /// Status code.
        status: u32,
        /// Values in key order.
        values: Vec<Option<V>>,
    },
    /// `GetListResp`: the requested elements.
    List {
        /// Status code.
        status: u32,
        /// Elements.
        values: Vec<V>,
    },
    /// `Ack` (Put, PutM, PutList, AppendToList, Delete; errors): `count` is
    /// the number of keys written/deleted, or the list length after
    /// AppendToList.
    Ack {
        /// Status code.
        status: u32,
        /// Count.
        count: u64,
    },
}

impl<V> Response<V> {
    /// The status code.
    pub fn status(&self) -> u32 {
        match self {
            Response::Value { status, .. }
            | Response::Values { status, .. }
            | Response::List { status, .. }
            | Response::Ack { status, .. } => *status,
        }
    }

    /// The same response with every value mapped (e.g. `to_vec` to keep it).
    pub fn map<W>(self, mut f: impl FnMut(V) -> W) -> Response<W> {
        match self {
            Response::Value { status, value } => Response::Value {
                status,
                value: value.map(f),
            },
            Response::Values { status, values } => Response::Values {
                status,
                values: values.into_iter().map(|v| v.map(&mut f)).collect(),
            },
            Response::List { status, values } => Response::List {
                status,
                values: values.into_iter().map(f).collect(),
            },
            Response::Ack { status, count } => Response::Ack { status, count },
        }
    }
}

/// An `Ack` with BAD_REQUEST.
pub fn bad_request<V>() -> Response<V> {
    Response::Ack {
        status: status::BAD_REQUEST,
        count: 0,
    }
}

/// Value vectors kept between requests (no allocation per GetM/GetList).
#[derive(Default)]
pub struct Spare {
    values: Vec<Option<Buf>>,
    list: Vec<Buf>,
}

impl Spare {
    /// Takes back the vectors of a sent response (dropping its values).
    pub fn recycle(&mut self, resp: Response<Buf>) {
        match resp {
            Response::Values { mut values, .. } => {
                values.clear();
                self.values = values;
            }
            Response::List {
                values: mut list, ..
            } => {
                list.clear();
                self.list = list;
            }
            Response::Value { .. } | Response::Ack { .. } => {}
        }
    }
}

/// The value bytes one GetM/GetList response may carry when `-I` is
/// smaller: the server's per-connection back-pressure mark. A native
/// response is one frame, built whole before it is queued, so this is what
/// bounds a reply while it is built; a client pages a longer list with
/// GetList's start/end and splits a larger GetM.
pub const MAX_REPLY_BYTES: usize = 4 << 20;

/// A response whose values exceed `max(max_value, MAX_REPLY_BYTES)`:
/// TOO_LARGE, nothing sent.
fn over_cap<'a>(values: impl IntoIterator<Item = &'a Buf>, max_value: usize) -> bool {
    let cap = max_value.max(MAX_REPLY_BYTES);
    let mut total = 0usize;
    values.into_iter().any(|v| {
        total += v.len();
        total > cap
    })
}

/// Runs `req` against `store`.
/// Values (and list elements) above `max_value` bytes (`-I`) are refused
/// with TOO_LARGE, as memcached refuses them; so are GetM and GetList
/// responses above [`MAX_REPLY_BYTES`] (or `max_value` if larger).
pub fn execute(
    store: &dyn Storage,
    req: &Request<'_>,
    spare: &mut Spare,
    max_value: usize,
) -> Response<Buf> {
    let too_large = |v: &[u8]| v.len() > max_value;
    let refuse = match *req {
        Request::Put { value, .. } | Request::AppendToList { value, .. } => too_large(value),
        Request::PutM { values, .. } | Request::PutList { values, .. } => {
            values.iter().any(|v| too_large(v))
        }
        _ => false,
    };
    if refuse {
        return Response::Ack {
            status: status::TOO_LARGE,
            count: 0,
        };
    }
    match *req {
        Request::Get { key } => {
            let (status, value) = match store.get(key) {
                Some(item) if item.kind() == Kind::String => (status::OK, Some(item.value())),
                Some(_) => (status::WRONG_TYPE, None),
                None => (status::NOT_FOUND, None),
            };
            Response::Value { status, value }
        }
        Request::GetFromList { key, index } => {
            let (status, value) = match store.get(key) {
                Some(item) if is_list(&item) => match item.list_get(index) {
                    Some(v) => (status::OK, Some(v)),
                    None => (status::NOT_FOUND, None),
                },
                Some(_) => (status::WRONG_TYPE, None),
                None => (status::NOT_FOUND, None),
            };
            Response::Value { status, value }
        }
        Request::Put { key, value } => {
            let status = match store.set(key, value, Meta::default(), SetMode::Set) {
                Ok(_) => status::OK,
                Err(e) => status_of(e),
            };
            Response::Ack {
                status,
                count: u64::from(status == status::OK),
            }
        }
        Request::GetM { keys } => {
            let mut values = std::mem::take(&mut spare.values);
            values.extend(keys.iter().map(|k| match store.get(k) {
                Some(item) if item.kind() == Kind::String => Some(item.value()),
                _ => None,
            }));
            if over_cap(values.iter().flatten(), max_value) {
                values.clear();
                spare.values = values;
                return Response::Ack {
                    status: status::TOO_LARGE,
                    count: 0,
                };
            }
            Response::Values {
                status: status::OK,
                values,
            }
        }
        Request::PutM { keys, values } => {
            if keys.len() != values.len() {
                return bad_request();
            }
            let mut status = status::OK;
            let mut count = 0;
            for (k, v) in keys.iter().zip(values) {
                match store.set(k, v, Meta::default(), SetMode::Set) {
                    Ok(_) => count += 1,
                    Err(e) => status = status_of(e),
                }
            }
            Response::Ack { status, count }
        }
        Request::GetList {
            key,
            start,
            end,
            all,
        } => {
            let mut values = std::mem::take(&mut spare.list);
            let status = match store.get(key) {
                Some(item) if is_list(&item) => {
                    let (start, end) = if all { (0, -1) } else { (start, end) };
                    values.extend(item.list_range(start, end));
                    status::OK
                }
                Some(_) => status::WRONG_TYPE,
                None => status::NOT_FOUND,
            };
            if over_cap(&values, max_value) {
                values.clear();
                spare.list = values;
                return Response::Ack {
                    status: status::TOO_LARGE,
                    count: 0,
                };
            }
            Response::List { status, values }
        }
        Request::PutList { key, values } => {
            let status = match store.put_list(key, values, Meta::default()) {
                Ok(()) => status::OK,
                Err(e) => status_of(e),
            };
            Response::Ack {
                status,
                count: values.len() as u64,
            }
        }
        Request::AppendToList { key, value } => match store.list_push(key, &[value], false) {
            Ok(len) => Response::Ack {
                status: status::OK,
                count: len as u64,
            },
            Err(e) => Response::Ack {
                status: status_of(e),
                count: 0,
            },
        },
        Request::Delete { key } => {
            let deleted = store.delete(key);
            Response::Ack {
                status: if deleted {
                    status::OK
                } else {
                    status::NOT_FOUND
                },
                count: u64::from(deleted),
            }
        }
    }
}

/// Bytes of stored values a response carries (what an amplification cap
/// compares with the request's size).
pub fn value_bytes(resp: &Response<Buf>) -> usize {
    match resp {
        Response::Value { value, .. } => value.as_ref().map_or(0, Buf::len),
        Response::Values { values, .. } => values.iter().flatten().map(Buf::len).sum(),
        Response::List { values, .. } => values.iter().map(Buf::len).sum(),
        Response::Ack { .. } => 0,
    }
}

/// Over UDP, a response whose values exceed `factor` times the request's
/// size becomes TOO_LARGE: the source address is unverified, so a small
/// spoofed request must not draw a large reply at someone else (0 = no
/// cap).
pub fn cap_amplification(resp: Response<Buf>, request_len: usize, factor: usize) -> Response<Buf> {
    if factor > 0 && value_bytes(&resp) > factor.saturating_mul(request_len) {
        Response::Ack {
            status: status::TOO_LARGE,
            count: 0,
        }
    } else {
        resp
    }
}

fn is_list(item: &crate::store::Item) -> bool {
    item.kind() == Kind::List
}
