//! brisk-wire's integration tests that need no binary of their own, in one test binary. `http_alloc`
//! and `sigv4_alloc` keep binaries of their own: each installs brisk-testkit's counting global
//! allocator.

mod sigv4_support;

mod azure_python;
mod azure_xml;
mod checksum_python;
mod checksum_streaming;
mod checksum_vectors;
mod http_conn;
mod http_roundtrip;
mod python_peer;
mod sigv4_botocore;
mod sigv4_chunked;
mod sigv4_roundtrip;
mod xml_aws_examples;
mod xml_hostile;
mod xml_keys;
mod xml_round_trip;
