//! Requests and limits: each a Kubernetes quantity, no request above its limit.

use super::{KubeError, Resources};

/// Each request and limit is a quantity Kubernetes accepts, and no request is above its limit:
/// either would be written into the pod spec and refused only by the API server.
pub(super) fn check_resources(r: &Resources) -> Result<(), KubeError> {
    let value = |what: &'static str, text: &str| {
        quantity(text).ok_or_else(|| KubeError::BadQuantity {
            what,
            value: text.to_owned(),
        })
    };
    for (resource, (req_what, request), (lim_what, limit)) in [
        (
            "cpu",
            ("cpu request", &r.cpu_request),
            ("cpu limit", &r.cpu_limit),
        ),
        (
            "memory",
            ("memory request", &r.memory_request),
            ("memory limit", &r.memory_limit),
        ),
    ] {
        // Equal values written in two units (`100m` and `0.1`) may differ in the last bit of a
        // float: only a request above its limit by more than that is refused.
        if value(req_what, request)? > value(lim_what, limit)? * (1.0 + 1e-9) {
            return Err(KubeError::RequestOverLimit {
                resource,
                request: request.clone(),
                limit: limit.clone(),
            });
        }
    }
    Ok(())
}

/// The value of a Kubernetes quantity (the grammar of `resource.Quantity`: a number, then an
/// optional binary-SI suffix `Ki`…`Ei`, decimal-SI suffix `m`, `k`, `M`…`E`, or exponent
/// `e`/`E` and an integer), or `None`. A sign is allowed only as `+`: no request or limit is
/// negative.
fn quantity(text: &str) -> Option<f64> {
    let s = text.strip_prefix('+').unwrap_or(text);
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(end);
    if !number.bytes().any(|b| b.is_ascii_digit()) || number.matches('.').count() > 1 {
        return None;
    }
    let n: f64 = number.parse().ok()?;
    let binary = |p: i32| 1024f64.powi(p);
    let scale = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        _ => {
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            10f64.powi(exponent.parse::<i32>().ok()?)
        }
    };
    Some(n * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_follow_kubernetes_grammar() {
        for (text, value) in [
            ("1", 1.0),
            ("500m", 0.5),
            ("1.5", 1.5),
            (".5", 0.5),
            ("2.", 2.0),
            ("+1", 1.0),
            ("128Mi", 128.0 * 1024.0 * 1024.0),
            ("1Gi", 1024f64.powi(3)),
            ("2k", 2000.0),
            ("1e3", 1000.0),
            ("1E-3", 0.001),
            ("1E", 1e18),
        ] {
            assert_eq!(quantity(text), Some(value), "{text}");
        }
        for bad in [
            "",
            "lots",
            "-1",
            "1.2.3",
            ".",
            "1 Gi",
            "1Gb",
            "1e",
            "1e+",
            "1\u{1b}[2J",
            "Mi",
        ] {
            assert_eq!(quantity(bad), None, "{bad:?}");
        }
        let r = |cpu_request: &str, cpu_limit: &str| {
            check_resources(&Resources {
                cpu_request: cpu_request.into(),
                cpu_limit: cpu_limit.into(),
                ..Resources::default()
            })
        };
        assert!(r("100m", "1").is_ok() && r("1", "1000m").is_ok());
        for (a, b) in [
            ("100m", "0.1"),
            ("300m", "0.3"),
            ("1.1", "1100m"),
            ("3e-1", "300m"),
        ] {
            assert!(r(a, b).is_ok() && r(b, a).is_ok(), "{a} = {b}");
        }
        assert!(r("1001m", "1").is_err());
        assert!(matches!(
            r("2", "500m"),
            Err(KubeError::RequestOverLimit {
                resource: "cpu",
                ..
            })
        ));
        assert!(matches!(
            r("100m", "lots"),
            Err(KubeError::BadQuantity {
                what: "cpu limit",
                ..
            })
        ));
        assert!(check_resources(&Resources::default()).is_ok());
    }
}
