//! When each piece of a connection's traffic is let through: the model of the network and of the
//! server's first-byte latency, as pure functions of the moments the proxy read the bytes, so that
//! the model is tested without a clock.
//!
//! - **Upstream** (client to server): bytes read at `t` reach the server at `t + RTT/2`, and none
//!   before `opened + RTT + RTT/2`: a new connection's handshake costs a round trip before its
//!   first request leaves the client.
//! - **Downstream** (server to client): a response's bytes leave "the server" no earlier than its
//!   first-byte gate and reach the client half a round trip later. The gate is the moment its
//!   request reached the server plus the first-byte latency `L` ([`Mode::Parallel`]: each pipelined
//!   request is delayed by `L` from its own arrival, as if the server worked on all of them at
//!   once), or `L` after the later of that arrival and the end of the previous response on the
//!   connection ([`Mode::Serial`]: a server that starts on a connection's next request only once it
//!   has answered the one before, as Go's `net/http` (MinIO) and `brisk serve` do).
//! - Order is kept: a piece is never released before the one read before it on the same direction.

use std::time::{Duration, Instant};

/// How pipelined requests on one connection share the first-byte latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Each response's first byte at its request's arrival + `L`.
    Parallel,
    /// Each response's first byte at `L` after its request's arrival or the previous response's
    /// end, whichever is later.
    Serial,
}

/// The delays of one proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Model {
    /// The round trip between client and server.
    pub rtt: Duration,
    /// Time from a request's arrival at the server to its response's first byte.
    pub first_byte: Duration,
    /// Whether pipelined requests wait for each other.
    pub mode: Mode,
}

impl Model {
    /// Half the round trip: each direction's share.
    pub fn one_way(&self) -> Duration {
        self.rtt / 2
    }
}

/// The upstream direction of one connection.
#[derive(Debug, Clone, Copy)]
pub struct Upstream {
    one_way: Duration,
    /// No byte reaches the server before this: the handshake's round trip, then the way there.
    earliest: Instant,
}

impl Upstream {
    /// A connection accepted at `opened`.
    pub fn new(model: &Model, opened: Instant) -> Self {
        Self {
            one_way: model.one_way(),
            earliest: opened + model.rtt + model.one_way(),
        }
    }

    /// When bytes read from the client at `read_at` reach the server.
    pub fn release(&self, read_at: Instant) -> Instant {
        (read_at + self.one_way).max(self.earliest)
    }
}

/// The downstream direction of one connection.
#[derive(Debug, Clone)]
pub struct Downstream {
    model: Model,
    /// The current response's first-byte gate ("server" time).
    gate: Option<Instant>,
    /// "Server" time of the last piece let through (pieces keep their order).
    last: Option<Instant>,
    /// "Server" time of the end of the previous response.
    previous_end: Option<Instant>,
}

impl Downstream {
    /// A connection's downstream, no response yet.
    pub fn new(model: Model) -> Self {
        Self {
            model,
            gate: None,
            last: None,
            previous_end: None,
        }
    }

    /// A response starts: it answers the request that reached the server at `request_at` (`None`
    /// for an interim `1xx` answer or one no request is known for: no first-byte latency).
    pub fn begin(&mut self, request_at: Option<Instant>) {
        self.gate = request_at.map(|arrived| {
            let start = match (self.model.mode, self.previous_end) {
                (Mode::Serial, Some(end)) => arrived.max(end),
                _ => arrived,
            };
            start + self.model.first_byte
        });
    }

    /// When a piece of the current response, read from the server at `read_at`, reaches the
    /// client; `ends`: it is the response's last piece.
    pub fn release(&mut self, read_at: Instant, ends: bool) -> Instant {
        let mut leaves = read_at;
        if let Some(gate) = self.gate {
            leaves = leaves.max(gate);
        }
        if let Some(last) = self.last {
            leaves = leaves.max(last);
        }
        self.last = Some(leaves);
        if ends {
            self.previous_end = Some(leaves);
        }
        leaves + self.model.one_way()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn model(mode: Mode) -> Model {
        Model {
            rtt: 2 * MS,
            first_byte: 10 * MS,
            mode,
        }
    }

    #[test]
    fn a_new_connection_pays_the_handshake_then_half_a_round_trip() {
        let t0 = Instant::now();
        let up = Upstream::new(&model(Mode::Parallel), t0);
        assert_eq!(up.release(t0), t0 + 3 * MS);
        assert_eq!(up.release(t0 + 50 * MS), t0 + 51 * MS);
    }

    #[test]
    fn pipelined_responses_each_wait_from_their_own_request_in_parallel_mode() {
        let t0 = Instant::now();
        let mut down = Downstream::new(model(Mode::Parallel));
        // Three requests arrived together; the server answered them back to back at once.
        let mut first_bytes = Vec::new();
        for i in 0..3u32 {
            down.begin(Some(t0));
            first_bytes.push(down.release(t0 + i * MS / 10, false));
            down.release(t0 + i * MS / 10, true);
        }
        // All three leave at the gate (t0 + L), none waits for the one before.
        assert_eq!(first_bytes, vec![t0 + 11 * MS; 3]);
    }

    #[test]
    fn pipelined_responses_queue_behind_each_other_in_serial_mode() {
        let t0 = Instant::now();
        let mut down = Downstream::new(model(Mode::Serial));
        let mut first_bytes = Vec::new();
        for _ in 0..3 {
            down.begin(Some(t0));
            first_bytes.push(down.release(t0, false));
            down.release(t0, true);
        }
        assert_eq!(
            first_bytes,
            vec![t0 + 11 * MS, t0 + 21 * MS, t0 + 31 * MS],
            "each L counts from the end of the response before"
        );
    }

    #[test]
    fn pieces_keep_their_order_and_late_ones_pass_at_once() {
        let t0 = Instant::now();
        let mut down = Downstream::new(model(Mode::Parallel));
        down.begin(Some(t0));
        assert_eq!(down.release(t0, false), t0 + 11 * MS);
        // Read after the gate: only the way to the client.
        assert_eq!(down.release(t0 + 20 * MS, false), t0 + 21 * MS);
        // An interim answer has no first-byte latency but still follows what went before.
        down.begin(None);
        assert_eq!(down.release(t0 + 5 * MS, true), t0 + 21 * MS);
    }
}
