//! `tls_server_config` into a rustls server configuration (the `ring` provider: no
//! OpenSSL, no aws-lc). The exporter toolkit's names are kept: `client_auth_type` takes
//! `NoClientCert`, `VerifyClientCertIfGiven` or `RequireAndVerifyClientCert`
//! (`RequestClientCert` and `RequireAnyClientCert` accept an unverified certificate, which
//! proves nothing, and are refused); `min_version`/`max_version` take `TLS12` or `TLS13`
//! (`TLS10`/`TLS11` as a minimum mean TLS 1.2, the oldest rustls speaks);
//! `cipher_suites` the Go names of TLS 1.2 suites (TLS 1.3's are always on, as in Go);
//! `curve_preferences` `X25519`, `CurveP256`, `CurveP384`.

use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, SupportedProtocolVersion};
use std::sync::Arc;

mod error;
pub use error::{TlsError, TlsWhy};

fn at(line: usize, why: TlsWhy) -> TlsError {
    TlsError { line, why }
}

/// `tls_server_config` as written: each value with its line.
#[derive(Default)]
pub struct Tls {
    pub cert: Option<(String, usize)>,
    pub key: Option<(String, usize)>,
    pub client_ca: Option<(String, usize)>,
    pub client_auth: Option<(String, usize)>,
    pub min_version: Option<(String, usize)>,
    pub max_version: Option<(String, usize)>,
    pub cipher_suites: Option<(Vec<String>, usize)>,
    pub curves: Option<(Vec<String>, usize)>,
    pub prefer_server: bool,
    /// The section's last line, for what is missing.
    pub line: usize,
}

fn version(v: &str, line: usize, min: bool) -> Result<u8, TlsError> {
    match v {
        "TLS10" | "TLS11" if min => Ok(12),
        "TLS12" => Ok(12),
        "TLS13" => Ok(13),
        _ => Err(at(
            line,
            TlsWhy::Version {
                given: v.to_string(),
                min,
            },
        )),
    }
}

/// The rustls configuration, or why the section is wrong.
pub fn server_config(t: &Tls) -> Result<ServerConfig, TlsError> {
    let (Some((cert, cl)), Some((key, kl))) = (&t.cert, &t.key) else {
        return Err(at(t.line, TlsWhy::NeedsCertAndKey));
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| at(*cl, TlsWhy::Certificate(e)))?;
    if certs.is_empty() {
        return Err(at(*cl, TlsWhy::NoCertificate));
    }
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes())
        .map_err(|e| at(*kl, TlsWhy::PrivateKey(e)))?;

    // Deprecated since rustls 0.23.48 for lacking post-quantum key exchange (only the
    // aws-lc provider has it, and aws-lc needs cmake and a C toolchain to build): the
    // classic ECDHE groups are what node_exporter offers too.
    #[allow(deprecated)]
    let mut provider = ring::default_provider();
    if let Some((names, line)) = &t.cipher_suites {
        let mut keep = Vec::new();
        for n in names {
            let Some(s) = provider
                .cipher_suites
                .iter()
                .find(|s| format!("{:?}", s.suite()) == *n)
            else {
                let known: Vec<String> = provider
                    .cipher_suites
                    .iter()
                    .filter(|s| s.tls13().is_none())
                    .map(|s| format!("{:?}", s.suite()))
                    .collect();
                return Err(at(
                    *line,
                    TlsWhy::CipherSuite {
                        name: n.clone(),
                        supported: known,
                    },
                ));
            };
            keep.push(*s);
        }
        // TLS 1.3's suites are not configurable, as in Go
        keep.extend(
            provider
                .cipher_suites
                .iter()
                .filter(|s| s.tls13().is_some()),
        );
        provider.cipher_suites = keep;
    }
    if let Some((names, line)) = &t.curves {
        let all = provider.kx_groups.clone();
        provider.kx_groups = names
            .iter()
            .map(|n| {
                let want = match n.as_str() {
                    "X25519" => "X25519",
                    "CurveP256" => "secp256r1",
                    "CurveP384" => "secp384r1",
                    _ => "",
                };
                all.iter()
                    .find(|g| format!("{:?}", g.name()) == want)
                    .copied()
                    .ok_or_else(|| at(*line, TlsWhy::Curve(n.clone())))
            })
            .collect::<Result<_, _>>()?;
    }
    let min = match &t.min_version {
        Some((v, l)) => version(v, *l, true)?,
        None => 12,
    };
    let max = match &t.max_version {
        Some((v, l)) => version(v, *l, false)?,
        None => 13,
    };
    if min > max {
        return Err(at(
            t.max_version.as_ref().map_or(t.line, |x| x.1),
            TlsWhy::MinAboveMax,
        ));
    }
    let versions: Vec<&'static SupportedProtocolVersion> =
        [(12, &rustls::version::TLS12), (13, &rustls::version::TLS13)]
            .into_iter()
            .filter(|(v, _)| (min..=max).contains(v))
            .map(|(_, p)| p)
            .collect();
    let provider: Arc<CryptoProvider> = Arc::new(provider);

    let auth = t.client_auth.as_ref().map(|(s, l)| (s.as_str(), *l));
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| at(t.line, TlsWhy::Protocols(e)))?;
    let builder = match (auth, &t.client_ca) {
        (None | Some(("NoClientCert", _)), None) => builder.with_no_client_auth(),
        (None | Some(("NoClientCert", _)), Some((_, l))) => {
            return Err(at(*l, TlsWhy::CaWithoutAuth))
        }
        (Some((a @ ("RequireAndVerifyClientCert" | "VerifyClientCertIfGiven"), l)), ca) => {
            let Some((ca, cal)) = ca else {
                return Err(at(l, TlsWhy::AuthNeedsCa(a.to_string())));
            };
            let mut roots = RootCertStore::empty();
            for c in CertificateDer::pem_slice_iter(ca.as_bytes()) {
                let c = c.map_err(|e| at(*cal, TlsWhy::ClientCa(Box::new(e))))?;
                roots
                    .add(c)
                    .map_err(|e| at(*cal, TlsWhy::ClientCa(Box::new(e))))?;
            }
            if roots.is_empty() {
                return Err(at(*cal, TlsWhy::NoClientCa));
            }
            let mut v = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            if a == "VerifyClientCertIfGiven" {
                v = v.allow_unauthenticated();
            }
            let v = v
                .build()
                .map_err(|e| at(*cal, TlsWhy::ClientCa(Box::new(e))))?;
            builder.with_client_cert_verifier(v)
        }
        (Some((a @ ("RequestClientCert" | "RequireAnyClientCert"), l)), _) => {
            return Err(at(l, TlsWhy::AuthUnchecked(a.to_string())))
        }
        (Some((a, l)), _) => return Err(at(l, TlsWhy::AuthUnknown(a.to_string()))),
    };
    let mut cfg = builder
        .with_single_cert(certs, key)
        .map_err(|e| at(*kl, TlsWhy::CertAndKey(e)))?;
    cfg.ignore_client_order = t.prefer_server;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(extra: impl FnOnce(&mut Tls)) -> Result<ServerConfig, String> {
        let k = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let mut t = Tls {
            cert: Some((k.cert.pem(), 2)),
            key: Some((k.signing_key.serialize_pem(), 3)),
            line: 1,
            ..Tls::default()
        };
        extra(&mut t);
        server_config(&t).map_err(|e| e.to_string())
    }

    #[test]
    fn versions_suites_and_curves() {
        let c = with(|_| {}).unwrap();
        assert_eq!(c.alpn_protocols, [b"http/1.1".to_vec()]);
        with(|t| t.min_version = Some(("TLS13".into(), 4))).unwrap();
        with(|t| t.min_version = Some(("TLS10".into(), 4))).unwrap();
        let e = with(|t| t.max_version = Some(("TLS11".into(), 5))).unwrap_err();
        assert!(
            e.starts_with("line 5: ") && e.contains("TLS12 or TLS13"),
            "{e}"
        );
        let e = with(|t| {
            t.min_version = Some(("TLS13".into(), 4));
            t.max_version = Some(("TLS12".into(), 5));
        })
        .unwrap_err();
        assert!(e.contains("above max_version"), "{e}");
        let c = with(|t| {
            t.cipher_suites = Some((vec!["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384".into()], 6));
            t.curves = Some((vec!["X25519".into(), "CurveP384".into()], 7));
            t.prefer_server = true;
        })
        .unwrap();
        assert!(c.ignore_client_order);
        let e = with(|t| t.curves = Some((vec!["CurveP521".into()], 7))).unwrap_err();
        assert!(e.starts_with("line 7: curve 'CurveP521'"), "{e}");
        let e = with(|t| t.key = Some(("not a key".into(), 3))).unwrap_err();
        assert!(e.starts_with("line 3: private key"), "{e}");
        let e = with(|t| t.cert = None).unwrap_err();
        assert!(e.contains("needs cert_file"), "{e}");
    }
}
