//! `rocetap decode`: read frames, decode them, print one line per frame or every field
//! as CSV / JSON. A damaged input still prints every frame before the damage, then
//! fails with one line (exit 2). `-v` adds every field of each frame under its summary
//! line (text only; CSV and JSON already carry every field). Color, when the command line
//! asks for it, marks the summary's trouble words (NAK, RNR NAK, CE, CNP, bad ICRC, a
//! malformed frame).

use crate::cli::{DecodeArgs, DecodeFormat};
use rocetap::capture::input::for_each_frame_of;
use rocetap::capture::Frame;
use rocetap::error::{exit, is_broken_pipe, Failure};
use rocetap::report::fields::{tunnel, Ctx, FIELDS};
use rocetap::report::style::{Paint, Tone};
use rocetap::report::summary;
use std::io::{self, Write};
use std::ops::ControlFlow;

pub fn run(a: DecodeArgs, color: bool) -> Result<i32, Failure> {
    let paint = Paint::new(color);
    let paths = a.sources.all();
    if paths.is_empty() {
        return Err(Failure::new("decode: no input")
            .hint("give a capture file, or -r - to read a pcap stream from stdin"));
    }
    if a.count == Some(0) {
        return Err(Failure::new("decode: -c 0: the count must be at least 1"));
    }
    let cfg = dissectors::Config {
        roce_port: a.opts.roce_port,
        check_icrc: !a.opts.no_icrc,
    };
    let stdout = io::stdout();
    let plain = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    // CSV goes through the csv crate (quoting); the other formats write directly.
    let mut sink = match a.format {
        DecodeFormat::Csv => Sink::Csv(Box::new(csv::WriterBuilder::new().from_writer(plain))),
        _ => Sink::Plain(plain),
    };
    let mut number = 0u64;
    let mut first_ts: Option<u64> = None;
    let mut line = String::with_capacity(256);
    let mut io_err: Option<io::Error> = None;
    let limit = a.count.unwrap_or(u64::MAX);
    match a.format {
        DecodeFormat::Csv => {
            if let Err(e) = sink.record(FIELDS.iter().map(|(n, _)| *n)) {
                return write_failure(e);
            }
        }
        DecodeFormat::Json => {
            line.push_str("{\"schema\":\"rocetap.decode/1\",\"frames\":[");
        }
        DecodeFormat::Text => {}
    }
    let mut fields: Vec<String> = vec![String::new(); FIELDS.len()];
    let run = for_each_frame_of(&paths, a.quiet, |f: &Frame<'_>| {
        number += 1;
        let d = dissectors::decode(f.link, f.data, f.orig_len, &cfg);
        let first = *first_ts.get_or_insert(f.ts_ns);
        let c = Ctx {
            number,
            frame: f,
            first_ts: first,
            d: &d,
        };
        let res = match a.format {
            DecodeFormat::Text => {
                line.clear();
                text_line(&c, &mut line, paint);
                if a.verbose {
                    every_field(&c, &mut line, paint);
                }
                sink.write_all(line.as_bytes())
            }
            DecodeFormat::Csv => {
                for (i, (_, ex)) in FIELDS.iter().enumerate() {
                    fields[i].clear();
                    if let Some(v) = ex(&c) {
                        v.write_to(&mut fields[i]);
                    }
                }
                sink.record(&fields)
            }
            DecodeFormat::Json => {
                let mut m = serde_json::Map::new();
                for (name, ex) in FIELDS.iter().chain(tunnel_fields(&c)) {
                    if let Some(v) = ex(&c) {
                        m.insert((*name).to_string(), v.to_json());
                    }
                }
                if number > 1 {
                    line.push(',');
                }
                line.push('\n');
                line.push_str(&serde_json::Value::Object(m).to_string());
                let r = sink.write_all(line.as_bytes());
                line.clear();
                r
            }
        };
        if let Err(e) = res {
            io_err = Some(e);
            return ControlFlow::Break(());
        }
        if number >= limit {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    if let Some(e) = io_err.take() {
        return write_failure(e);
    }
    let cut_short = match run {
        Ok(c) => c,
        Err(e) => {
            let _ = sink.flush();
            return Err(e.into());
        }
    };
    if a.format == DecodeFormat::Json {
        line.push_str("\n]}\n");
        if let Err(e) = sink.write_all(line.as_bytes()) {
            return write_failure(e);
        }
    }
    if let Err(e) = sink.flush() {
        return write_failure(e);
    }
    // Like tshark: every complete frame was printed; the cut is a warning, not a failure.
    for c in &cut_short {
        eprintln!("{}", c.warning());
    }
    Ok(exit::OK)
}

fn text_line(c: &Ctx<'_>, line: &mut String, paint: Paint) {
    use std::fmt::Write as _;
    let rel = c.frame.ts_ns as i64 - c.first_ts as i64;
    let _ = write!(line, "{} {:.6} ", c.number, rel as f64 / 1e9);
    match c.d.endpoints() {
        Some((s, d)) => {
            let _ = write!(line, "{s} → {d} ");
        }
        None => {
            if let Some(e) = c.d.eth {
                let _ = write!(
                    line,
                    "{} → {} ",
                    dissectors::ethernet::Mac(&e.src),
                    dissectors::ethernet::Mac(&e.dst)
                );
            }
        }
    }
    if let Some(t) = &c.d.tunnel {
        tunnel::describe(t, line);
    }
    summary::describe(c.d, line, paint);
    line.push('\n');
}

/// The mirror / overlay fields, for a tunnelled frame only (JSON and `-v`; the CSV keeps
/// its columns).
fn tunnel_fields(c: &Ctx<'_>) -> &'static [(&'static str, rocetap::report::fields::Extract)] {
    if c.d.tunnel.is_some() {
        tunnel::FIELDS
    } else {
        &[]
    }
}

/// `-v`: every field the frame has, `    name: value` one per line, then a blank line
/// (the layout of `tshark -V`, with the names of `tshark -T fields`).
fn every_field(c: &Ctx<'_>, out: &mut String, paint: Paint) {
    let mut v = String::new();
    for (name, ex) in FIELDS.iter().chain(tunnel_fields(c)) {
        if let Some(x) = ex(c) {
            v.clear();
            x.write_to(&mut v);
            out.push_str("    ");
            paint.push(out, Tone::Dim, name);
            out.push_str(": ");
            out.push_str(&v);
            out.push('\n');
        }
    }
    out.push('\n');
}

fn write_failure(e: io::Error) -> Result<i32, Failure> {
    if is_broken_pipe(&e) {
        Ok(exit::OK)
    } else {
        Err(Failure::new(format!("writing output: {e}")))
    }
}

type Out<'a> = io::BufWriter<io::StdoutLock<'a>>;

enum Sink<'a> {
    Plain(Out<'a>),
    // Boxed: the csv writer carries its own buffer state and dwarfs the plain variant.
    Csv(Box<csv::Writer<Out<'a>>>),
}

impl Sink<'_> {
    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        match self {
            Sink::Plain(w) => w.write_all(b),
            Sink::Csv(_) => Ok(()),
        }
    }
    fn record<I, T>(&mut self, r: I) -> io::Result<()>
    where
        I: IntoIterator<Item = T>,
        T: AsRef<[u8]>,
    {
        match self {
            Sink::Csv(w) => w.write_record(r).map_err(csv_io),
            Sink::Plain(_) => Ok(()),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Plain(w) => w.flush(),
            Sink::Csv(w) => w.flush(),
        }
    }
}

fn csv_io(e: csv::Error) -> io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        other => io::Error::other(format!("{other:?}")),
    }
}
