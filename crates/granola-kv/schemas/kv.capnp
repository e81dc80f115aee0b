# Cap'n Proto equivalent of proto/kv.proto (the native protocol's messages
# for `granola-kv --serializer capnp`). Same frames, kinds and status codes
# as kv.proto; only the payload encoding differs (a frame's payload is the
# standard capnp stream framing: segment table, then the segments).
# Generated Rust code is checked in at src/server/baselines/gen/kv_capnp.rs;
# regenerate with bench/regen-baselines.sh (needs Debian's capnproto and
# capnpc-rust from the capnpc crate).
#
# Every response struct has `status @0 :UInt32` (data word 0, bits 0..32),
# so a client that expects a GetResp/GetMResp/GetListResp can still read the
# status of an Ack (BAD_REQUEST, TOO_LARGE).
@0xbede048afe11b355;

# kind 1
struct GetReq {
  key @0 :Data;
}
# response to Get and GetFromList
struct GetResp {
  status @0 :UInt32;
  value @1 :Data;
}

# kind 2
struct PutReq {
  key @0 :Data;
  value @1 :Data;
}

# kind 3
struct GetMReq {
  keys @0 :List(Data);
}
struct GetMResp {
  status @0 :UInt32;
  values @1 :List(Data);
  found @2 :List(Bool);
}

# kind 4
struct PutMReq {
  keys @0 :List(Data);
  values @1 :List(Data);
}

# kind 5
struct GetListReq {
  key @0 :Data;
  start @1 :Int64;
  end @2 :Int64;
  all @3 :Bool;
}
struct GetListResp {
  status @0 :UInt32;
  values @1 :List(Data);
}

# kind 6
struct PutListReq {
  key @0 :Data;
  values @1 :List(Data);
}

# kind 7
struct AppendToListReq {
  key @0 :Data;
  value @1 :Data;
}

# kind 8
struct GetFromListReq {
  key @0 :Data;
  index @1 :Int64;
}

# kind 9
struct DeleteReq {
  key @0 :Data;
}

# response to Put, PutM, PutList, AppendToList, Delete (and to bad requests)
struct Ack {
  status @0 :UInt32;
  count @1 :UInt64;
}
