//! What each request gets. Credentials first (401 before any work when
//! `basic_auth_users` is set), then the method (GET and HEAD; 405 with `Allow`
//! otherwise), then exactly the documented paths: `/metrics`, `/healthz`, `/report` (404
//! when turned off) and `/`; 404 for anything else.

use super::auth::{Users, Verdict};
use crate::agent::http::{health, ReportRequest};
use crate::agent::metrics;
use crate::agent::state::Published;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{
    HeaderName, HeaderValue, ALLOW, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE,
};
use hyper::{Method, Request, Response, StatusCode};
use std::convert::Infallible;
use std::sync::mpsc::{sync_channel, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long `/report` waits for the analysis loop.
const REPORT_WAIT: Duration = Duration::from_secs(20);

/// What the handlers share.
pub struct Ctx {
    pub shared: Arc<Mutex<Published>>,
    pub reports: SyncSender<ReportRequest>,
    pub users: Users,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub report: bool,
}

type Resp = Response<Full<Bytes>>;

fn text(status: StatusCode, body: impl Into<Bytes>) -> Resp {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// Answers one request.
pub async fn handle(ctx: Arc<Ctx>, req: Request<Incoming>) -> Result<Resp, Infallible> {
    let mut r = answer(&ctx, &req).await;
    for (k, v) in &ctx.headers {
        r.headers_mut().insert(k.clone(), v.clone());
    }
    Ok(r)
}

async fn answer(ctx: &Arc<Ctx>, req: &Request<Incoming>) -> Resp {
    let auth = req
        .headers()
        .get(AUTHORIZATION)
        .map(hyper::http::HeaderValue::as_bytes);
    match ctx.users.judge(auth) {
        Verdict::Pass => {}
        Verdict::Missing => return unauthorized(),
        Verdict::Check {
            hash,
            known,
            user,
            password,
        } => {
            let users = ctx.users.clone();
            let ok =
                tokio::task::spawn_blocking(move || users.verify(&hash, known, user, password))
                    .await
                    .unwrap_or(false);
            if !ok {
                return unauthorized();
            }
        }
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    match req.uri().path() {
        "/metrics" => {
            let body = {
                let p = ctx
                    .shared
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                metrics::render(&p)
            };
            let mut r = text(StatusCode::OK, body);
            r.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static(metrics::CONTENT_TYPE),
            );
            r
        }
        "/healthz" => {
            let why = {
                let p = ctx
                    .shared
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                health(&p)
            };
            match why {
                None => text(StatusCode::OK, "ok\n"),
                Some(why) => text(StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")),
            }
        }
        "/report" if ctx.report => match report(&ctx.reports).await {
            Some(body) => {
                let mut r = text(StatusCode::OK, body);
                r.headers_mut()
                    .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                r
            }
            None => text(
                StatusCode::SERVICE_UNAVAILABLE,
                "the analysis loop did not answer\n",
            ),
        },
        "/" if ctx.report => text(StatusCode::OK, "rocetap agent: /metrics /healthz /report\n"),
        "/" => text(StatusCode::OK, "rocetap agent: /metrics /healthz\n"),
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

fn unauthorized() -> Resp {
    let mut r = text(StatusCode::UNAUTHORIZED, "unauthorized\n");
    r.headers_mut().insert(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"rocetap\", charset=\"UTF-8\""),
    );
    r
}

/// Asks the analysis loop for the report and waits for it without holding a thread.
async fn report(reports: &SyncSender<ReportRequest>) -> Option<Vec<u8>> {
    let (tx, rx) = sync_channel(1);
    reports.try_send(tx).ok()?;
    let until = tokio::time::Instant::now() + REPORT_WAIT;
    loop {
        match rx.try_recv() {
            Ok(body) => return Some(body),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) if tokio::time::Instant::now() >= until => return None,
            Err(TryRecvError::Empty) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}
