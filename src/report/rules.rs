//! `--fail-on` rules: `NAME OP NUMBER`, OP one of `> >= < <= == !=`, parsed with nom.
//! A rule names a condition to fail on, as the option says: `--fail-on 'nak_psn_seq > 0'`
//! fails the run (exit 1) when the capture has a PSN-sequence NAK. Names are
//! checked against the report's keys before anything is evaluated, so a typo is an
//! error (exit 2), never a rule that silently passes.

use nom::branch::alt;
use nom::bytes::complete::{tag, take_while};
use nom::character::complete::{multispace0, satisfy};
use nom::combinator::{all_consuming, map, recognize};
use nom::number::complete::double;
use nom::sequence::{delimited, pair};
use nom::{IResult, Parser};
use std::fmt;

/// The comparison of a rule, as written between its name and its number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `==` (exact float equality; the report's counters are integers).
    Eq,
    /// `!=`
    Ne,
}

impl Op {
    fn symbol(self) -> &'static str {
        match self {
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Eq => "==",
            Op::Ne => "!=",
        }
    }
    /// Whether `a OP b` holds (`a` the report's value, `b` the rule's number).
    pub fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Eq => a == b,
            Op::Ne => a != b,
        }
    }
}

/// One `--fail-on` rule, `NAME OP NUMBER`: the run fails when it holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// A key of the report's `totals` or `derived` (checked before evaluation).
    pub name: String,
    /// The comparison.
    pub op: Op,
    /// The number compared with.
    pub value: f64,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.name, self.op.symbol(), self.value)
    }
}

fn name(i: &str) -> IResult<&str, &str> {
    recognize(pair(
        satisfy(|c| c.is_ascii_alphabetic() || c == '_'),
        take_while(|c: char| c.is_ascii_alphanumeric() || c == '_'),
    ))
    .parse(i)
}

fn op(i: &str) -> IResult<&str, Op> {
    alt((
        map(tag(">="), |_| Op::Ge),
        map(tag("<="), |_| Op::Le),
        map(tag("=="), |_| Op::Eq),
        map(tag("!="), |_| Op::Ne),
        map(tag(">"), |_| Op::Gt),
        map(tag("<"), |_| Op::Lt),
    ))
    .parse(i)
}

fn ws<'a, O>(
    p: impl Parser<&'a str, Output = O, Error = nom::error::Error<&'a str>>,
) -> impl Parser<&'a str, Output = O, Error = nom::error::Error<&'a str>> {
    delimited(multispace0, p, multispace0)
}

/// Parses one rule, e.g. `cnp_per_s < 1000` or `nak_psn_seq==0`.
pub fn parse(s: &str) -> Result<Rule, RuleError> {
    let r = all_consuming((ws(name), ws(op), ws(double))).parse(s);
    match r {
        Ok((_, (n, o, v))) if v.is_finite() => Ok(Rule {
            name: n.to_string(),
            op: o,
            value: v,
        }),
        _ => Err(RuleError::Syntax(s.to_string())),
    }
}

/// A rule checked against a value.
#[derive(Debug)]
pub struct Verdict<'a> {
    /// The rule checked.
    pub rule: &'a Rule,
    /// The report's value for the rule's name.
    pub actual: f64,
    /// The rule's condition is true: the run fails.
    pub failed: bool,
}

/// Checks every rule; `lookup` gives the value of a name, `None` for an unknown name
/// (an error naming the rule).
pub fn check(
    rules: &[Rule],
    lookup: impl Fn(&str) -> Option<f64>,
) -> Result<Vec<Verdict<'_>>, RuleError> {
    rules
        .iter()
        .map(|r| match lookup(&r.name) {
            Some(actual) => Ok(Verdict {
                rule: r,
                actual,
                failed: r.op.holds(actual, r.value),
            }),
            None => Err(RuleError::UnknownName {
                name: r.name.clone(),
                rule: r.to_string(),
            }),
        })
        .collect()
}

/// A rule that does not parse, or names no value of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleError {
    /// Not `NAME OP NUMBER` (the rule as given).
    Syntax(String),
    /// A name the report has no value for.
    UnknownName {
        /// The name.
        name: String,
        /// The whole rule.
        rule: String,
    },
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleError::Syntax(s) => write!(
                f,
                "bad --fail-on rule '{s}': expected NAME OP NUMBER with OP one of > >= < <= == != (e.g. 'nak_psn_seq > 0')"
            ),
            RuleError::UnknownName { name, rule } => write!(
                f,
                "unknown name '{name}' in --fail-on rule '{rule}' (use a key of \"totals\" or \"derived\" in the JSON report)"
            ),
        }
    }
}

impl std::error::Error for RuleError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_operator_and_spacing() {
        for (s, op) in [
            ("a > 1", Op::Gt),
            ("a>=1", Op::Ge),
            ("a <1", Op::Lt),
            (" a<= 1 ", Op::Le),
            ("a==1", Op::Eq),
            ("a != 1", Op::Ne),
        ] {
            let r = parse(s).unwrap();
            assert_eq!((r.name.as_str(), r.op, r.value), ("a", op, 1.0), "{s}");
        }
        let r = parse("cnp_per_s < 1.5e3").unwrap();
        assert_eq!((r.name.as_str(), r.value), ("cnp_per_s", 1500.0));
    }

    #[test]
    fn rejects_malformed_rules() {
        for s in [
            "", "a", "a >", "> 1", "a = 1", "a => 1", "a > 1 2", "1a > 1", "a > x", "a > nan",
        ] {
            assert!(parse(s).is_err(), "{s}");
        }
    }

    #[test]
    fn check_reports_values_and_unknown_names() {
        let rules = vec![parse("x == 0").unwrap(), parse("y < 5").unwrap()];
        let v = check(&rules, |n| match n {
            "x" => Some(1.0),
            "y" => Some(2.0),
            _ => None,
        })
        .unwrap();
        assert!(!v[0].failed && v[1].failed);
        assert_eq!(v[0].actual, 1.0);
        let bad = vec![parse("z > 0").unwrap()];
        assert!(check(&bad, |_| None)
            .unwrap_err()
            .to_string()
            .contains("unknown name 'z'"));
    }
}
