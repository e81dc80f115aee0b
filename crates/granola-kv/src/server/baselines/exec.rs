//! What every request does to the store, once for all baseline codecs. It
//! mirrors `native::handle` (same store calls, statuses and counts), so the
//! serializers differ only in how requests and replies are encoded.

use super::{bad_request, Request, Response};
use crate::server::native::{status, status_of};
use crate::store::{Kind, Meta, SetMode, Store};
use granola::Buf;

/// Value vectors kept between requests (no allocation per GetM/GetList).
#[derive(Default)]
pub(super) struct Spare {
    values: Vec<Option<Buf>>,
    list: Vec<Buf>,
}

impl Spare {
    /// Takes back the vectors of a sent response (dropping its values).
    pub(super) fn recycle(&mut self, resp: Response<Buf>) {
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

/// Runs `req` against `store`.
pub(super) fn execute(store: &Store, req: &Request<'_>, spare: &mut Spare) -> Response<Buf> {
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
                Some(item) if item.kind() == Kind::List => match item.list_get(index) {
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
                Some(item) if item.kind() == Kind::List => {
                    let (start, end) = if all { (0, -1) } else { (start, end) };
                    values.extend(item.list_range(start, end));
                    status::OK
                }
                Some(_) => status::WRONG_TYPE,
                None => status::NOT_FOUND,
            };
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
