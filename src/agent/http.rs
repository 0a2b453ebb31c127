//! The agent's HTTP endpoints, served by `tiny_http` on one thread: `/metrics` (the
//! Prometheus text format), `/healthz` (200 `ok`, or 503 and why), `/report` (the analyze
//! JSON of the flight recorder's current window, computed by the analysis loop on
//! request) and `/` (a list of the three). Anything else is 404; a method other than GET
//! or HEAD is 405.

use super::metrics;
use super::state::Published;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tiny_http::{Header, Method, Response, Server};

/// A `/report` request to the analysis loop: the reply goes back on the channel inside.
pub type ReportRequest = SyncSender<Vec<u8>>;

/// The loop's tick may be this late before `/healthz` says the analysis is stuck.
const STALL: Duration = Duration::from_secs(10);

/// How long `/report` waits for the analysis loop.
const REPORT_WAIT: Duration = Duration::from_secs(20);

fn header(k: &str, v: &str) -> Header {
    Header::from_bytes(k.as_bytes(), v.as_bytes()).expect("static header")
}

/// Serves until `stop` is set.
pub fn serve(
    server: Server,
    shared: Arc<Mutex<Published>>,
    reports: SyncSender<ReportRequest>,
    stop: Arc<AtomicBool>,
) {
    while !stop.load(Ordering::SeqCst) {
        let req = match server.recv_timeout(Duration::from_millis(200)) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(_) => break,
        };
        let path = req.url().split('?').next().unwrap_or("").to_string();
        if !matches!(req.method(), Method::Get | Method::Head) {
            let _ = req.respond(Response::from_string("only GET\n").with_status_code(405));
            continue;
        }
        let resp = match path.as_str() {
            "/metrics" => {
                let text = {
                    let p = shared.lock().unwrap_or_else(|e| e.into_inner());
                    metrics::render(&p)
                };
                Response::from_string(text)
                    .with_header(header("Content-Type", metrics::CONTENT_TYPE))
            }
            "/healthz" => {
                let p = shared.lock().unwrap_or_else(|e| e.into_inner());
                match health(&p) {
                    None => Response::from_string("ok\n"),
                    Some(why) => Response::from_string(format!("{why}\n")).with_status_code(503),
                }
            }
            "/report" => match report(&reports) {
                Some(body) => Response::from_data(body)
                    .with_header(header("Content-Type", "application/json")),
                None => Response::from_string("the analysis loop did not answer\n")
                    .with_status_code(503),
            },
            "/" => Response::from_string("rocetap agent: /metrics /healthz /report\n"),
            _ => Response::from_string("not found\n").with_status_code(404),
        };
        let _ = req.respond(resp);
    }
}

/// Why the agent is unhealthy, or `None`.
pub fn health(p: &Published) -> Option<String> {
    if let Some(why) = &p.unhealthy {
        return Some(why.clone());
    }
    if p.tick.elapsed() > STALL {
        return Some(format!(
            "the analysis loop has not published for {} s",
            p.tick.elapsed().as_secs()
        ));
    }
    let failed: Vec<String> = p
        .sources
        .iter()
        .filter_map(|s| s.error.as_ref().map(|e| format!("{}: {e}", s.name)))
        .collect();
    (!failed.is_empty()).then(|| format!("capture stopped: {}", failed.join("; ")))
}

fn report(reports: &SyncSender<ReportRequest>) -> Option<Vec<u8>> {
    let (tx, rx): (SyncSender<Vec<u8>>, Receiver<Vec<u8>>) = sync_channel(1);
    reports.try_send(tx).ok()?;
    rx.recv_timeout(REPORT_WAIT).ok()
}
