//! Why a web config's `tls_server_config` cannot be served: one line naming the line of
//! the file and what is wrong there.

use std::fmt;

/// Why `tls_server_config` cannot be served, at a line of the web config.
#[derive(Debug)]
pub struct TlsError {
    /// The line of the web config file.
    pub line: usize,
    /// What is wrong.
    pub why: TlsWhy,
}

/// What is wrong in `tls_server_config`.
#[derive(Debug)]
pub enum TlsWhy {
    /// A TLS version rustls cannot speak (`min`: given as `min_version`).
    Version {
        /// The version as given.
        given: String,
        /// Given as `min_version`.
        min: bool,
    },
    /// No certificate or no key.
    NeedsCertAndKey,
    /// The certificate's PEM is broken.
    Certificate(rustls::pki_types::pem::Error),
    /// No certificate in the certificate's PEM.
    NoCertificate,
    /// The private key's PEM is broken.
    PrivateKey(rustls::pki_types::pem::Error),
    /// A cipher suite rustls does not offer, and the ones it does.
    CipherSuite {
        /// The suite as given.
        name: String,
        /// The supported (TLS 1.2) ones.
        supported: Vec<String>,
    },
    /// A curve rustls does not offer.
    Curve(String),
    /// `min_version` above `max_version`.
    MinAboveMax,
    /// rustls refuses the protocol versions.
    Protocols(rustls::Error),
    /// `client_ca_file` without a client_auth_type that checks certificates.
    CaWithoutAuth,
    /// A client_auth_type that checks certificates without `client_ca_file`.
    AuthNeedsCa(String),
    /// The client CA cannot be used.
    ClientCa(Box<dyn std::error::Error + Send + Sync>),
    /// No certificate in `client_ca_file`.
    NoClientCa,
    /// A client_auth_type that accepts certificates without checking them.
    AuthUnchecked(String),
    /// An unknown client_auth_type.
    AuthUnknown(String),
    /// The certificate and key do not go together.
    CertAndKey(rustls::Error),
}

fn safe(s: &str) -> String {
    crate::report::safe::term(s).to_string()
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.why)
    }
}

impl fmt::Display for TlsWhy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsWhy::Version { given, min } => write!(
                f,
                "TLS version '{}': use TLS12 or TLS13{}",
                safe(given),
                if *min { "" } else { " (rustls speaks no older)" }
            ),
            TlsWhy::NeedsCertAndKey => f.write_str(
                "tls_server_config needs cert_file (or cert) and key_file (or key)",
            ),
            TlsWhy::Certificate(e) => write!(f, "certificate: {e}"),
            TlsWhy::NoCertificate => f.write_str("no PEM certificate in the certificate"),
            TlsWhy::PrivateKey(e) => write!(f, "private key: {e}"),
            TlsWhy::CipherSuite { name, supported } => write!(
                f,
                "cipher suite '{}' is not supported (supported: {})",
                safe(name),
                supported.join(", ")
            ),
            TlsWhy::Curve(n) => write!(
                f,
                "curve '{}' is not supported (use X25519, CurveP256, CurveP384)",
                safe(n)
            ),
            TlsWhy::MinAboveMax => f.write_str("min_version is above max_version"),
            TlsWhy::Protocols(e) => write!(f, "{e}"),
            TlsWhy::CaWithoutAuth => f.write_str(
                "client_ca_file is set but client_auth_type is NoClientCert: set client_auth_type to RequireAndVerifyClientCert or VerifyClientCertIfGiven",
            ),
            TlsWhy::AuthNeedsCa(a) => write!(f, "client_auth_type {a} needs client_ca_file"),
            TlsWhy::ClientCa(e) => write!(f, "client CA: {e}"),
            TlsWhy::NoClientCa => f.write_str("no PEM certificate in client_ca_file"),
            TlsWhy::AuthUnchecked(a) => write!(
                f,
                "client_auth_type {a} accepts a certificate without checking it: use RequireAndVerifyClientCert or VerifyClientCertIfGiven with client_ca_file"
            ),
            TlsWhy::AuthUnknown(a) => write!(
                f,
                "client_auth_type '{}': use NoClientCert, VerifyClientCertIfGiven or RequireAndVerifyClientCert",
                safe(a)
            ),
            TlsWhy::CertAndKey(e) => write!(f, "certificate and key: {e}"),
        }
    }
}

impl std::error::Error for TlsError {}
