//! The admin endpoint on `--admin-address`: a tiny HTTP/1.1 server for
//! scrapers and probes on a trusted network. `GET /metrics` answers the
//! Prometheus text exposition, `GET /healthz` 200 while the process serves,
//! `GET /readyz` 200 while hsd can serve requests (the backend reachable,
//! not draining) and 503 with one line saying why not. `/health` and
//! `/ready` are the same two. Other paths answer 404, other methods than
//! GET and HEAD 405. It serves at most `MAX_ADMIN_CONNECTIONS` connections
//! at once, each for at most 10 seconds, one request each.

use crate::metrics::Metrics;
use hsd_storage::Backend;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// Admin connections served at once; more are closed as soon as they are
/// accepted. A scraper or a health check needs one or two: the bound keeps
/// a client that opens connections and never finishes a request from
/// holding tasks, sockets and rendered bodies without end on the thread
/// that also accepts the HandlerSocket ports.
pub(crate) const MAX_ADMIN_CONNECTIONS: usize = 16;

/// How long one admin connection may take, from accept to its last byte
/// written: a client that does not send its request or read the answer is
/// closed then.
const ADMIN_CONNECTION_TIME: Duration = Duration::from_secs(10);

/// How long the request head may take to arrive.
const ADMIN_REQUEST_WAIT: Duration = Duration::from_secs(5);

/// The most of a request head read; the rest is not looked at.
const MAX_HEAD: usize = 8192;

/// What readiness knows beside the backend: whether hsd is draining.
#[derive(Default)]
pub(crate) struct Phase {
    draining: AtomicBool,
}

impl Phase {
    /// Shutdown began: `/readyz` answers 503 from now on.
    pub(crate) fn draining(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }
}

/// Serves the admin endpoint until the task is dropped, to at most
/// `MAX_ADMIN_CONNECTIONS` connections at once.
pub(crate) async fn serve<B: Backend>(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    backend: Arc<B>,
    phase: Arc<Phase>,
) {
    let mut backoff = crate::accept_backoff::AcceptBackoff::default();
    let places = Arc::new(Semaphore::new(MAX_ADMIN_CONNECTIONS));
    loop {
        let (sock, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                backoff.failed(&e, "admin").await;
                continue;
            }
        };
        let Ok(place) = places.clone().try_acquire_owned() else {
            tracing::debug!(%peer, "admin connection closed: {MAX_ADMIN_CONNECTIONS} already open");
            drop(sock);
            continue;
        };
        let metrics = metrics.clone();
        let backend = backend.clone();
        let phase = phase.clone();
        tokio::spawn(async move {
            let _place = place;
            let _ = tokio::time::timeout(
                ADMIN_CONNECTION_TIME,
                answer(sock, &metrics, &*backend, &phase),
            )
            .await;
        });
    }
}

/// One answer: status line, content type and body.
struct Reply {
    status: &'static str,
    content_type: &'static str,
    body: String,
    /// 405's `Allow` header.
    allow: bool,
}

impl Reply {
    fn text(status: &'static str, body: String) -> Reply {
        Reply {
            status,
            content_type: "text/plain; charset=utf-8",
            body,
            allow: false,
        }
    }
}

/// What a request asks, from its request line.
#[derive(Debug, PartialEq, Eq)]
enum Request {
    Metrics,
    Health,
    Ready,
    NotFound,
    /// A method other than GET and HEAD.
    MethodNotAllowed,
    /// No request line (or not one of HTTP).
    Bad,
}

/// Reads `METHOD TARGET HTTP/x.y`; whether the method is HEAD.
fn route(head: &[u8]) -> (Request, bool) {
    let first = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = first.strip_suffix(b"\r").unwrap_or(first);
    let Ok(line) = std::str::from_utf8(line) else {
        return (Request::Bad, false);
    };
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return (Request::Bad, false);
    };
    if !version.starts_with("HTTP/") || method.is_empty() {
        return (Request::Bad, false);
    }
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        return (Request::MethodNotAllowed, false);
    }
    let path = target.split_once('?').map_or(target, |(p, _)| p);
    let request = match path {
        "/metrics" => Request::Metrics,
        "/healthz" | "/health" => Request::Health,
        "/readyz" | "/ready" => Request::Ready,
        _ => Request::NotFound,
    };
    (request, head_only)
}

/// Reads the request head (up to its blank line, `MAX_HEAD` bytes or
/// `ADMIN_REQUEST_WAIT`), answers it, and closes.
async fn answer<B: Backend>(mut sock: TcpStream, metrics: &Metrics, backend: &B, phase: &Phase) {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 2048];
    let read_head = async {
        while head.len() < MAX_HEAD {
            match sock.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
            if head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n") {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(ADMIN_REQUEST_WAIT, read_head).await;
    let (request, head_only) = route(&head);
    let reply = match request {
        Request::Metrics => {
            // The backend's state as of this scrape.
            let up = backend.reachable().await.is_ok();
            metrics.backend_up.set(i64::from(up));
            Reply {
                status: "200 OK",
                content_type: "text/plain; version=0.0.4",
                body: metrics.render(),
                allow: false,
            }
        }
        Request::Health => Reply::text("200 OK", "ok\n".into()),
        Request::Ready => {
            let state = if phase.draining.load(Ordering::Relaxed) {
                Err("draining: hsd is shutting down".to_string())
            } else {
                let reached = backend.reachable().await;
                metrics.backend_up.set(i64::from(reached.is_ok()));
                reached.map_err(|why| {
                    format!(
                        "backend {} cannot be reached: {why}",
                        backend.describe_target()
                    )
                })
            };
            match state {
                Ok(()) => Reply::text("200 OK", "ok\n".into()),
                Err(why) => Reply::text("503 Service Unavailable", format!("{}\n", one_line(&why))),
            }
        }
        Request::NotFound => Reply::text(
            "404 Not Found",
            "not found: this endpoint serves /metrics, /healthz and /readyz\n".into(),
        ),
        Request::MethodNotAllowed => Reply {
            allow: true,
            ..Reply::text("405 Method Not Allowed", "only GET and HEAD\n".into())
        },
        Request::Bad => Reply::text("400 Bad Request", "not an HTTP request\n".into()),
    };
    let head = format!(
        "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n",
        reply.status,
        reply.content_type,
        reply.body.len(),
        if reply.allow {
            "Allow: GET, HEAD\r\n"
        } else {
            ""
        },
    );
    let _ = sock.write_all(head.as_bytes()).await;
    if !head_only {
        let _ = sock.write_all(reply.body.as_bytes()).await;
    }
    let _ = sock.shutdown().await;
}

/// `why` on one line: a probe's log shows the first line of a body.
fn one_line(why: &str) -> String {
    why.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::{route, Request};

    #[test]
    fn requests_route_by_method_and_path() {
        for (head, want, head_only) in [
            (
                &b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"[..],
                Request::Metrics,
                false,
            ),
            (
                b"GET /metrics?x=1 HTTP/1.0\r\n\r\n",
                Request::Metrics,
                false,
            ),
            (b"HEAD /healthz HTTP/1.1\r\n\r\n", Request::Health, true),
            (b"GET /health HTTP/1.1\n\n", Request::Health, false),
            (b"GET /readyz HTTP/1.1\r\n\r\n", Request::Ready, false),
            (b"GET /ready HTTP/1.1\r\n\r\n", Request::Ready, false),
            (b"GET / HTTP/1.1\r\n\r\n", Request::NotFound, false),
            (b"GET /metricsx HTTP/1.1\r\n\r\n", Request::NotFound, false),
            (
                b"DELETE /x HTTP/1.1\r\n\r\n",
                Request::MethodNotAllowed,
                false,
            ),
            (
                b"POST /metrics HTTP/1.1\r\n\r\n",
                Request::MethodNotAllowed,
                false,
            ),
            (b"", Request::Bad, false),
            (b"hello\r\n\r\n", Request::Bad, false),
            (b"\xff\xfe / HTTP/1.1\r\n\r\n", Request::Bad, false),
        ] {
            assert_eq!(
                route(head),
                (want, head_only),
                "{:?}",
                String::from_utf8_lossy(head)
            );
        }
    }
}
