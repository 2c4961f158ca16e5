//! Circuit breakers in PostgreSQL (`jkz_circuits`): one row per service
//! holding the same record as `state/circuit/<service>.json`, changed by
//! the same decisions ([`super::record`]). Each decision is one
//! transaction holding the service's advisory lock, so of any number of
//! runs on any number of machines racing a half-open circuit exactly one
//! becomes its probe. A service without a row is closed, as a service
//! without a file is.

use std::time::Duration;

use postgres::types::Type;

use super::record::{closed, parse_record, Circuit};
use crate::team::connect::{with_conn, Schema};
use crate::team::{Budget, LockClass, RegistryUrl, TeamError};

/// Applies `edit` to the circuit of `service` in one transaction, writing
/// it back when `edit` says it changed it.
pub fn update<T, F>(url: &RegistryUrl, service: &str, edit: F) -> Result<T, TeamError>
where
    T: Send + 'static,
    F: FnOnce(&mut Circuit) -> (T, bool) + Send + 'static,
{
    let service = service.to_string();
    with_conn(
        url,
        Budget::command(),
        Schema::Migrate,
        Some(Duration::ZERO),
        move |conn| {
            let run = |client: &mut postgres::Client| -> Result<T, postgres::Error> {
                let mut tx = client.transaction()?;
                tx.query_typed(
                    "SELECT pg_advisory_xact_lock($1, hashtext($2))",
                    &[
                        (&(LockClass::Circuit as i32), Type::INT4),
                        (&service, Type::TEXT),
                    ],
                )?;
                let mut circuit = tx
                    .query_typed_opt(
                        "SELECT record FROM jkz_circuits WHERE service = $1",
                        &[(&service, Type::TEXT)],
                    )?
                    .map_or_else(
                        || closed(&service),
                        |r| parse_record(r.get::<_, &str>(0).as_bytes(), &service),
                    );
                let (out, changed) = edit(&mut circuit);
                if changed {
                    let text = serde_json::to_string(&circuit).expect("a circuit serializes");
                    tx.query_typed(
                        "INSERT INTO jkz_circuits (service, record) VALUES ($1, $2)
                     ON CONFLICT (service) DO UPDATE SET record = excluded.record",
                        &[(&service, Type::TEXT), (&text, Type::TEXT)],
                    )?;
                }
                tx.commit()?;
                Ok(out)
            };
            run(&mut conn.client).map_err(|e| conn.err(e))
        },
    )
}

/// Every circuit (one, when `service` is given), by name.
pub fn status(url: &RegistryUrl, service: Option<&str>) -> Result<Vec<Circuit>, TeamError> {
    let service = service.map(str::to_string);
    with_conn(
        url,
        Budget::command(),
        Schema::ReadOnly,
        Some(Duration::ZERO),
        move |conn| {
            if conn.version == 0 {
                return Ok(service.iter().map(|s| closed(s)).collect());
            }
            let rows = match &service {
                // Unnamed statements: no prepared statement to lose to a
                // transaction pooler between two messages.
                Some(s) => conn.client.query_typed(
                    "SELECT service, record FROM jkz_circuits WHERE service = $1",
                    &[(s, postgres::types::Type::TEXT)],
                ),
                None => conn
                    .client
                    .query_typed("SELECT service, record FROM jkz_circuits", &[]),
            }
            .map_err(|e| conn.err(e))?;
            let mut out: Vec<Circuit> = rows
                .iter()
                .map(|r| parse_record(r.get::<_, &str>(1).as_bytes(), r.get::<_, &str>(0)))
                .collect();
            if let (Some(s), true) = (&service, out.is_empty()) {
                out.push(closed(s));
            }
            out.sort_by(|a, b| a.service.cmp(&b.service));
            Ok(out)
        },
    )
}
