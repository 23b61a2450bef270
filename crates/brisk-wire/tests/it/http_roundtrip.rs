//! Round-trip properties of the HTTP codec: heads survive serialisation and parsing unchanged, and a
//! chunk-encoded body decodes to the same bytes however the input is split.

use brisk_wire::framing::BodyDecoder;
use brisk_wire::http::{
    ChunkHeader, ChunkedDecoder, Headers, Limits, ParseStatus, RequestHead, ResponseHead, Version,
    write_last_chunk,
};
use proptest::prelude::*;

fn token() -> impl Strategy<Value = String> {
    "[!#$%&'*+.^_`|~0-9A-Za-z-]{1,16}"
}

/// A field value as it survives a round trip: tab, visible ASCII, space and obs-text bytes, without
/// leading or trailing whitespace.
fn field_value() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop_oneof![Just(b'\t'), 0x20u8..0x7f, 0x80u8..=0xff], 0..48).prop_map(
        |v| {
            let is_ws = |b: &u8| *b == b' ' || *b == b'\t';
            let start = v.iter().position(|b| !is_ws(b)).unwrap_or(v.len());
            let end = v.iter().rposition(|b| !is_ws(b)).map_or(start, |i| i + 1);
            v[start..end].to_vec()
        },
    )
}

fn fields() -> impl Strategy<Value = Vec<(String, Vec<u8>)>> {
    prop::collection::vec((token(), field_value()), 0..24)
}

fn version() -> impl Strategy<Value = Version> {
    prop_oneof![Just(Version::Http10), Just(Version::Http11)]
}

fn fill(headers: &mut Headers, fields: &[(String, Vec<u8>)]) {
    for (name, value) in fields {
        headers.append(name, value).unwrap();
    }
}

proptest! {
    #[test]
    fn request_heads_round_trip(
        method in token(),
        target in "/[!-~]{0,80}",
        version in version(),
        fields in fields(),
        trailing in prop::collection::vec(any::<u8>(), 0..16),
    ) {
        let mut head = RequestHead::with_request_line(&method, &target).unwrap();
        head.set_version(version);
        fill(head.headers_mut(), &fields);
        let mut wire = Vec::new();
        head.write_to(&mut wire);
        let head_len = wire.len();
        wire.extend_from_slice(&trailing);

        let mut parsed = RequestHead::new();
        let status = parsed.parse(&wire, &Limits::default()).unwrap();
        prop_assert_eq!(status, ParseStatus::Complete(head_len));
        prop_assert_eq!(&parsed, &head);
        // Serialising the parsed head gives the same bytes.
        let mut again = Vec::new();
        parsed.write_to(&mut again);
        prop_assert_eq!(&again[..], &wire[..head_len]);
    }

    #[test]
    fn response_heads_round_trip(
        status in 100u16..=999,
        reason in "[\t -~]{0,32}",
        version in version(),
        fields in fields(),
    ) {
        let mut head = ResponseHead::new();
        head.set_status(status, &reason).unwrap();
        head.set_version(version);
        fill(head.headers_mut(), &fields);
        let mut wire = Vec::new();
        head.write_to(&mut wire);

        let mut parsed = ResponseHead::new();
        let got = parsed.parse(&wire, &Limits::default()).unwrap();
        prop_assert_eq!(got, ParseStatus::Complete(wire.len()));
        prop_assert_eq!(&parsed, &head);
    }

    #[test]
    fn chunked_bodies_round_trip_under_any_split(
        body in prop::collection::vec(any::<u8>(), 0..4096),
        chunk_sizes in prop::collection::vec(1usize..700, 1..16),
        extensions in prop::collection::vec(prop::option::of("[a-z]{1,8}(=[a-z0-9]{1,8})?"), 1..16),
        trailer_fields in prop::collection::vec((token(), field_value()), 0..4),
        splits in prop::collection::vec(any::<prop::sample::Index>(), 0..24),
        direct_reads in any::<bool>(),
    ) {
        // Encode with the given chunk sizes (cycled) and extensions.
        let mut wire = Vec::new();
        let mut offset = 0;
        let mut i = 0;
        while offset < body.len() {
            let size = chunk_sizes[i % chunk_sizes.len()].min(body.len() - offset);
            let header = ChunkHeader::new(size as u64);
            let line = header.as_bytes();
            wire.extend_from_slice(&line[..line.len() - 2]);
            if let Some(ext) = &extensions[i % extensions.len()] {
                wire.push(b';');
                wire.extend_from_slice(ext.as_bytes());
            }
            wire.extend_from_slice(b"\r\n");
            wire.extend_from_slice(&body[offset..offset + size]);
            wire.extend_from_slice(b"\r\n");
            offset += size;
            i += 1;
        }
        let mut trailers = Headers::new();
        for (name, value) in &trailer_fields {
            trailers.append(name, value).unwrap();
        }
        write_last_chunk(&trailers, &mut wire);
        let encoded_len = wire.len();
        wire.extend_from_slice(b"GET /next HTTP/1.1\r\n\r\n");

        // Feed it in pieces cut at the random split points, as a connection would: unconsumed bytes
        // stay in a buffer and new bytes are appended.
        let mut cuts: Vec<usize> = splits.iter().map(|s| s.index(wire.len() + 1)).collect();
        cuts.push(wire.len());
        cuts.sort_unstable();
        let mut decoder = ChunkedDecoder::new(&Limits::default());
        let mut buffer: Vec<u8> = Vec::new();
        let mut payload = Vec::new();
        let mut consumed_total = 0;
        let mut fed = 0;
        for cut in cuts {
            buffer.extend_from_slice(&wire[fed..cut]);
            fed = cut;
            loop {
                if decoder.is_done() {
                    break;
                }
                let remaining = decoder.data_remaining();
                if direct_reads && remaining > 0 && !buffer.is_empty() {
                    // Take payload through the direct path, as a read into the destination would.
                    let n = (remaining as usize).min(buffer.len());
                    decoder.advance_data(&buffer[..n]).unwrap();
                    payload.extend_from_slice(&buffer[..n]);
                    buffer.drain(..n);
                    consumed_total += n;
                    continue;
                }
                let got = decoder.decode(&buffer).unwrap();
                if got.consumed == 0 {
                    break;
                }
                payload.extend_from_slice(&buffer[got.data.clone()]);
                buffer.drain(..got.consumed);
                consumed_total += got.consumed;
            }
        }
        prop_assert!(decoder.is_done());
        prop_assert_eq!(&payload, &body);
        prop_assert_eq!(consumed_total, encoded_len);
        prop_assert_eq!(decoder.payload_len(), body.len() as u64);
        prop_assert_eq!(decoder.trailers().unwrap(), &trailers);
    }
}
