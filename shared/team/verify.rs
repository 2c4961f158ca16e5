//! Whether the team registry's tables are the ones this jkz's schema makes,
//! column by column: a version number says which migrations ran, not what
//! became of the tables since. A column renamed by hand (or by another
//! tool) left `jkz_schema` at the current version while every claim failed
//! and every hook failed open: no claim was enforced anywhere, and
//! `jkz registry migrate` said "up to date".
//!
//! [`verify`] reads each table's columns (name, type, `NOT NULL`) and
//! primary key from PostgreSQL's catalog, for the table jkz's own
//! statements reach (`to_regclass`, through `search_path`), and compares
//! them with [`TABLES`]. Each difference is a [`Drift`]: the table and
//! column, what is wrong, the SQL that repairs it, and whether that SQL is
//! safe to run unasked (`jkz registry migrate --repair` runs the safe ones;
//! the others are shown for a person to run):
//!
//! | found | repair | run by `--repair` |
//! |---|---|---|
//! | a table missing | the migrations again (`jkz registry migrate`) | yes |
//! | a column missing, and exactly one column jkz does not know, of its type | rename that one back | yes |
//! | a column missing, nullable, or the table empty | add it | yes |
//! | a `NOT NULL` column missing from a table with rows | add it, give each row a value, then `SET NOT NULL` | no: the value is a person's to choose |
//! | a column of another type | `ALTER COLUMN … TYPE` | no: converting may fail or lose data |
//! | `NOT NULL` where jkz writes nulls | `DROP NOT NULL` | yes |
//! | nullable where jkz never writes a null | `SET NOT NULL` (refused by the server while a null is there) | yes |
//! | a column jkz does not know, `NOT NULL` without a default (every insert of jkz's fails) | `DROP NOT NULL` | no: it is someone else's column |
//! | no primary key | add it (refused by the server while rows repeat) | yes |
//! | another primary key | drop it, add jkz's | no |
//!
//! A column jkz does not know that is nullable or has a default is left
//! alone: jkz's statements name their columns, so it harms nothing.

use postgres::types::Type;
use postgres::GenericClient;

/// One column as this jkz's schema makes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    /// As PostgreSQL's `format_type` spells it.
    pub ty: &'static str,
    pub not_null: bool,
}

/// One table as this jkz's schema makes it.
#[derive(Clone, Copy, Debug)]
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [Column],
    pub primary_key: &'static [&'static str],
}

const fn col(name: &'static str, ty: &'static str, not_null: bool) -> Column {
    Column { name, ty, not_null }
}

/// Every table of the schema ([`super::schema::SCHEMA_VERSION`]), as its
/// migrations leave it. The regression test that renames a column holds
/// this to the migrations: on a fresh database, no drift.
pub const TABLES: [Table; 6] = [
    Table {
        name: "jkz_schema",
        columns: &[col("id", "integer", true), col("version", "integer", true)],
        primary_key: &["id"],
    },
    Table {
        name: "jkz_chats",
        columns: &[
            col("session_id", "text", true),
            col("cwd", "text", true),
            col("worktree", "text", false),
            col("branch", "text", false),
            col("pid", "bigint", false),
            col("host", "text", false),
            col("pid_start", "bigint", false),
            col("started", "bigint", true),
            col("heartbeat", "bigint", true),
            col("ended", "bigint", false),
        ],
        primary_key: &["session_id"],
    },
    Table {
        name: "jkz_claims",
        columns: &[
            col("issue", "text", true),
            col("session_id", "text", true),
            col("worktree", "text", false),
            col("acquired", "bigint", true),
            col("host", "text", false),
        ],
        primary_key: &["issue"],
    },
    Table {
        name: "jkz_locks",
        columns: &[
            col("kind", "text", true),
            col("name", "text", true),
            col("record", "text", true),
        ],
        primary_key: &["kind", "name"],
    },
    Table {
        name: "jkz_circuits",
        columns: &[col("service", "text", true), col("record", "text", true)],
        primary_key: &["service"],
    },
    Table {
        name: "jkz_changes",
        columns: &[col("id", "integer", true), col("version", "bigint", true)],
        primary_key: &["id"],
    },
];

/// One column as the database has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub name: String,
    pub ty: String,
    pub not_null: bool,
    pub has_default: bool,
}

/// One table as the database has it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FoundTable {
    pub columns: Vec<Found>,
    /// The primary key's name and columns, when it has one.
    pub primary_key: Option<(String, Vec<String>)>,
    /// It holds no row.
    pub empty: bool,
}

/// How one table differs from the schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Drift {
    MissingTable {
        table: &'static str,
    },
    MissingColumn {
        table: &'static str,
        column: Column,
        /// The one column jkz does not know that has this column's type,
        /// when exactly one does: very likely this one, renamed.
        renamed_to: Option<String>,
        /// The table holds no row (a `NOT NULL` column can be added).
        empty: bool,
    },
    WrongType {
        table: &'static str,
        column: Column,
        found: String,
    },
    /// `NOT NULL` where jkz writes nulls: its inserts fail.
    NotNull {
        table: &'static str,
        column: Column,
    },
    /// Nullable where jkz never writes a null: a null there fails its reads.
    Nullable {
        table: &'static str,
        column: Column,
    },
    /// A column jkz does not know, `NOT NULL` without a default: every
    /// insert of jkz's fails.
    ForeignRequired {
        table: &'static str,
        column: String,
    },
    PrimaryKey {
        table: &'static str,
        expected: &'static [&'static str],
        /// The key found, with its constraint's name; none when the table
        /// has none.
        found: Option<(String, Vec<String>)>,
    },
}

/// `name` as an SQL identifier: quoted, so any name a column was given
/// (spaces, capitals, quotes) is said as it is.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl Drift {
    /// `table.column`, or the table alone.
    pub fn place(&self) -> String {
        match self {
            Drift::MissingTable { table } | Drift::PrimaryKey { table, .. } => table.to_string(),
            Drift::MissingColumn { table, column, .. }
            | Drift::WrongType { table, column, .. }
            | Drift::NotNull { table, column }
            | Drift::Nullable { table, column } => format!("{table}.{}", column.name),
            Drift::ForeignRequired { table, column } => format!("{table}.{column}"),
        }
    }

    /// What is wrong, in words.
    pub fn what(&self) -> String {
        match self {
            Drift::MissingTable { .. } => "the table is missing".into(),
            Drift::MissingColumn {
                column,
                renamed_to: Some(other),
                ..
            } => format!(
                "column {} ({}) is missing; {} ({}) is not jkz's: very likely it, renamed",
                column.name,
                column.ty,
                ident(other),
                column.ty
            ),
            Drift::MissingColumn { column, .. } => {
                format!("column {} ({}) is missing", column.name, column.ty)
            }
            Drift::WrongType { column, found, .. } => {
                format!("column {} is {found}, not {}", column.name, column.ty)
            }
            Drift::NotNull { column, .. } => format!(
                "column {} is NOT NULL, but jkz leaves it empty when it has no value: its writes fail",
                column.name
            ),
            Drift::Nullable { column, .. } => format!(
                "column {} may hold nulls, but jkz reads it as always set",
                column.name
            ),
            Drift::ForeignRequired { column, .. } => format!(
                "column {} is not jkz's and is NOT NULL without a default: every row jkz adds is refused",
                ident(column)
            ),
            Drift::PrimaryKey {
                expected,
                found: None,
                ..
            } => format!(
                "no primary key; jkz's is ({}): without it one claim, lock or circuit per key is not kept",
                expected.join(", ")
            ),
            Drift::PrimaryKey {
                expected,
                found: Some((_, columns)),
                ..
            } => format!(
                "primary key ({}), not jkz's ({})",
                columns.join(", "),
                expected.join(", ")
            ),
        }
    }

    /// The SQL that repairs it (for a missing table: the command).
    pub fn repair(&self) -> String {
        match self {
            Drift::MissingTable { .. } => "jkz registry migrate".into(),
            Drift::MissingColumn {
                table,
                column,
                renamed_to: Some(other),
                ..
            } => format!(
                "ALTER TABLE {table} RENAME COLUMN {} TO {}",
                ident(other),
                column.name
            ),
            Drift::MissingColumn {
                table,
                column,
                empty,
                ..
            } if !column.not_null || *empty => format!(
                "ALTER TABLE {table} ADD COLUMN {} {}{}",
                column.name,
                column.ty,
                if column.not_null { " NOT NULL" } else { "" }
            ),
            Drift::MissingColumn { table, column, .. } => format!(
                "ALTER TABLE {table} ADD COLUMN {name} {ty}; UPDATE {table} SET {name} = <a value for each row>; ALTER TABLE {table} ALTER COLUMN {name} SET NOT NULL",
                name = column.name,
                ty = column.ty
            ),
            Drift::WrongType { table, column, .. } => format!(
                "ALTER TABLE {table} ALTER COLUMN {name} TYPE {ty} USING {name}::{ty}",
                name = column.name,
                ty = column.ty
            ),
            Drift::NotNull { table, column } => {
                format!("ALTER TABLE {table} ALTER COLUMN {} DROP NOT NULL", column.name)
            }
            Drift::Nullable { table, column } => {
                format!("ALTER TABLE {table} ALTER COLUMN {} SET NOT NULL", column.name)
            }
            Drift::ForeignRequired { table, column } => {
                format!("ALTER TABLE {table} ALTER COLUMN {} DROP NOT NULL", ident(column))
            }
            Drift::PrimaryKey {
                table,
                expected,
                found: None,
            } => format!("ALTER TABLE {table} ADD PRIMARY KEY ({})", expected.join(", ")),
            Drift::PrimaryKey {
                table,
                expected,
                found: Some((name, _)),
            } => format!(
                "ALTER TABLE {table} DROP CONSTRAINT {}; ALTER TABLE {table} ADD PRIMARY KEY ({})",
                ident(name),
                expected.join(", ")
            ),
        }
    }

    /// True when `--repair` runs [`Drift::repair`] unasked: it loses no
    /// data, and the server refuses it whole where it would not hold (see
    /// the module's table).
    pub fn is_safe(&self) -> bool {
        match self {
            Drift::MissingTable { .. } | Drift::NotNull { .. } | Drift::Nullable { .. } => true,
            Drift::MissingColumn {
                column,
                renamed_to,
                empty,
                ..
            } => renamed_to.is_some() || !column.not_null || *empty,
            Drift::WrongType { .. } | Drift::ForeignRequired { .. } => false,
            Drift::PrimaryKey { found, .. } => found.is_none(),
        }
    }

    /// One line: where, what, and how to repair it.
    pub fn line(&self) -> String {
        let how = match self {
            Drift::MissingTable { .. } => "run `jkz registry migrate`".to_string(),
            _ if self.is_safe() => {
                format!("`jkz registry migrate --repair` runs: {}", self.repair())
            }
            _ => format!("repair by hand: {}", self.repair()),
        };
        format!("{}: {}; {how}", self.place(), self.what())
    }
}

/// How `found` (none: the table does not exist) differs from `table`.
pub fn compare(table: &Table, found: Option<&FoundTable>) -> Vec<Drift> {
    let Some(found) = found else {
        return vec![Drift::MissingTable { table: table.name }];
    };
    let name = table.name;
    let known = |n: &str| table.columns.iter().any(|c| c.name == n);
    let foreign: Vec<&Found> = found.columns.iter().filter(|f| !known(&f.name)).collect();
    let missing: Vec<&Column> = table
        .columns
        .iter()
        .filter(|c| !found.columns.iter().any(|f| f.name == c.name))
        .collect();
    let mut drifts = Vec::new();
    let mut renamed: Vec<&str> = Vec::new();
    for column in &missing {
        // Renamed only when nothing else could be meant: one foreign column
        // of the type, and one missing column of it.
        let same_type = |ty: &str| ty == column.ty;
        let candidates: Vec<&&Found> = foreign.iter().filter(|f| same_type(&f.ty)).collect();
        let rivals = missing.iter().filter(|m| same_type(m.ty)).count();
        let renamed_to = match (candidates.as_slice(), rivals) {
            ([one], 1) => {
                renamed.push(&one.name);
                Some(one.name.clone())
            }
            _ => None,
        };
        drifts.push(Drift::MissingColumn {
            table: name,
            column: **column,
            renamed_to,
            empty: found.empty,
        });
    }
    for column in table.columns {
        let Some(f) = found.columns.iter().find(|f| f.name == column.name) else {
            continue;
        };
        if f.ty != column.ty {
            drifts.push(Drift::WrongType {
                table: name,
                column: *column,
                found: f.ty.clone(),
            });
        } else if f.not_null && !column.not_null {
            drifts.push(Drift::NotNull {
                table: name,
                column: *column,
            });
        } else if !f.not_null && column.not_null {
            drifts.push(Drift::Nullable {
                table: name,
                column: *column,
            });
        }
    }
    for f in foreign {
        if f.not_null && !f.has_default && !renamed.contains(&f.name.as_str()) {
            drifts.push(Drift::ForeignRequired {
                table: name,
                column: f.name.clone(),
            });
        }
    }
    let key_matches = found.primary_key.as_ref().is_some_and(|(_, columns)| {
        let mut have: Vec<&str> = columns.iter().map(String::as_str).collect();
        let mut want = table.primary_key.to_vec();
        have.sort_unstable();
        want.sort_unstable();
        have == want
    });
    // A key on a column that is missing comes back with the column: its
    // own drift says so.
    let key_columns_present = table
        .primary_key
        .iter()
        .all(|k| found.columns.iter().any(|f| f.name == *k));
    let key_renamed = found
        .primary_key
        .as_ref()
        .is_some_and(|(_, columns)| columns.iter().any(|c| renamed.contains(&c.as_str())));
    if !key_matches && (key_columns_present || !key_renamed) {
        drifts.push(Drift::PrimaryKey {
            table: name,
            expected: table.primary_key,
            found: found.primary_key.clone(),
        });
    }
    drifts
}

/// Reads `table` as the database has it; none when it does not exist.
fn read_table(
    client: &mut impl GenericClient,
    table: &str,
) -> Result<Option<FoundTable>, postgres::Error> {
    let exists: bool = client
        .query_typed_one(
            "SELECT to_regclass($1::text) IS NOT NULL",
            &[(&table, Type::TEXT)],
        )?
        .get(0);
    if !exists {
        return Ok(None);
    }
    let columns = client
        .query_typed(
            "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.atthasdef
             FROM pg_attribute a
             WHERE a.attrelid = to_regclass($1::text) AND a.attnum > 0 AND NOT a.attisdropped
             ORDER BY a.attnum",
            &[(&table, Type::TEXT)],
        )?
        .iter()
        .map(|r| Found {
            name: r.get(0),
            ty: r.get(1),
            not_null: r.get(2),
            has_default: r.get(3),
        })
        .collect();
    let key_rows = client.query_typed(
        "SELECT c.conname::text, a.attname::text
         FROM pg_constraint c
         JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
         WHERE c.conrelid = to_regclass($1::text) AND c.contype = 'p'",
        &[(&table, Type::TEXT)],
    )?;
    let primary_key = key_rows.first().map(|r| {
        let name: String = r.get(0);
        (name, key_rows.iter().map(|r| r.get(1)).collect())
    });
    // The table's name is one of jkz's own constants, never input.
    let empty: bool = client
        .query_typed_one(
            &format!("SELECT NOT EXISTS (SELECT 1 FROM {})", ident(table)),
            &[],
        )?
        .get(0);
    Ok(Some(FoundTable {
        columns,
        primary_key,
        empty,
    }))
}

/// Every difference between the database's jkz tables and [`TABLES`].
/// Reads only.
pub fn verify(client: &mut impl GenericClient) -> Result<Vec<Drift>, postgres::Error> {
    let mut drifts = Vec::new();
    for table in &TABLES {
        let found = read_table(client, table.name)?;
        drifts.extend(compare(table, found.as_ref()));
    }
    Ok(drifts)
}

/// What `--repair` did with one drift.
#[derive(Clone, Debug)]
pub enum Repaired {
    Done(Drift),
    /// The server refused it (a null, a repeated key): why.
    Refused(Drift, String),
}

/// Runs the safe repairs of `drifts` ([`Drift::is_safe`]; a missing table
/// is left to the migrations), each under a savepoint of its own so one
/// the server refuses leaves the others done, in one transaction. The
/// caller holds the migration lock.
pub fn repair(
    tx: &mut postgres::Transaction,
    drifts: &[Drift],
) -> Result<Vec<Repaired>, postgres::Error> {
    let mut out = Vec::new();
    for drift in drifts {
        if !drift.is_safe() || matches!(drift, Drift::MissingTable { .. }) {
            continue;
        }
        let mut step = tx.savepoint("jkz_repair")?;
        match step.batch_execute(&drift.repair()) {
            Ok(()) => {
                step.commit()?;
                out.push(Repaired::Done(drift.clone()));
            }
            Err(e) => {
                let why = e
                    .as_db_error()
                    .map_or_else(|| e.to_string(), |d| d.message().to_string());
                step.rollback()?;
                out.push(Repaired::Refused(drift.clone(), why));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `table` as its migrations make it, with rows or not.
    fn as_made(table: &Table, empty: bool) -> FoundTable {
        FoundTable {
            columns: table
                .columns
                .iter()
                .map(|c| Found {
                    name: c.name.into(),
                    ty: c.ty.into(),
                    not_null: c.not_null,
                    has_default: false,
                })
                .collect(),
            primary_key: Some((
                format!("{}_pkey", table.name),
                table.primary_key.iter().map(|k| k.to_string()).collect(),
            )),
            empty,
        }
    }

    fn claims() -> &'static Table {
        TABLES.iter().find(|t| t.name == "jkz_claims").unwrap()
    }

    #[test]
    fn the_schema_as_made_has_no_drift() {
        for table in &TABLES {
            assert_eq!(
                compare(table, Some(&as_made(table, false))),
                [],
                "{}",
                table.name
            );
        }
        assert_eq!(
            compare(claims(), None),
            [Drift::MissingTable {
                table: "jkz_claims"
            }]
        );
    }

    #[test]
    fn a_renamed_column_is_named_and_renamed_back() {
        let mut found = as_made(claims(), false);
        found.columns[1].name = "owner session".into();
        let drifts = compare(claims(), Some(&found));
        assert_eq!(drifts.len(), 1, "{drifts:?}");
        let d = &drifts[0];
        assert_eq!(d.place(), "jkz_claims.session_id");
        assert!(d.is_safe());
        assert_eq!(
            d.repair(),
            "ALTER TABLE jkz_claims RENAME COLUMN \"owner session\" TO session_id"
        );
        assert!(
            d.line().contains("jkz registry migrate --repair"),
            "{}",
            d.line()
        );
        // The key column renamed: one drift, the rename brings the key back.
        let mut found = as_made(claims(), false);
        found.columns[0].name = "iss".into();
        found.primary_key = Some(("jkz_claims_pkey".into(), vec!["iss".into()]));
        let drifts = compare(claims(), Some(&found));
        assert_eq!(drifts.len(), 1, "{drifts:?}");
        assert!(
            matches!(&drifts[0], Drift::MissingColumn { renamed_to: Some(r), .. } if r == "iss")
        );
    }

    #[test]
    fn ambiguous_or_unsafe_changes_are_reported_not_repaired() {
        // Two text columns missing, two foreign text columns: which is
        // which cannot be told.
        let mut found = as_made(claims(), false);
        found.columns[1].name = "a".into();
        found.columns[2].name = "b".into();
        let drifts = compare(claims(), Some(&found));
        assert_eq!(drifts.len(), 3, "{drifts:?}");
        assert!(drifts.iter().all(|d| match d {
            Drift::MissingColumn { renamed_to, .. } => renamed_to.is_none(),
            Drift::ForeignRequired { .. } => true,
            _ => false,
        }));
        // A NOT NULL column missing from a table with rows: by hand; from
        // an empty one: added.
        let mut found = as_made(claims(), false);
        found.columns.remove(3);
        let d = &compare(claims(), Some(&found))[0];
        assert!(!d.is_safe() && d.repair().contains("SET NOT NULL"), "{d:?}");
        found.empty = true;
        let d = &compare(claims(), Some(&found))[0];
        assert!(d.is_safe());
        assert_eq!(
            d.repair(),
            "ALTER TABLE jkz_claims ADD COLUMN acquired bigint NOT NULL"
        );
        // Another type: by hand.
        let mut found = as_made(claims(), false);
        found.columns[3].ty = "text".into();
        let d = &compare(claims(), Some(&found))[0];
        assert!(
            matches!(d, Drift::WrongType { .. }) && !d.is_safe(),
            "{d:?}"
        );
        // Nullability either way: repaired.
        let mut found = as_made(claims(), false);
        found.columns[2].not_null = true;
        found.columns[3].not_null = false;
        let drifts = compare(claims(), Some(&found));
        assert_eq!(drifts.len(), 2, "{drifts:?}");
        assert!(drifts.iter().all(Drift::is_safe));
        // No primary key: added; another: by hand.
        let mut found = as_made(claims(), false);
        found.primary_key = None;
        let d = &compare(claims(), Some(&found))[0];
        assert!(
            d.is_safe() && d.repair().ends_with("ADD PRIMARY KEY (issue)"),
            "{d:?}"
        );
        found.primary_key = Some(("k".into(), vec!["session_id".into()]));
        let d = &compare(claims(), Some(&found))[0];
        assert!(!d.is_safe(), "{d:?}");
        // A foreign column with a default, or nullable: left alone.
        let mut found = as_made(claims(), false);
        found.columns.push(Found {
            name: "note".into(),
            ty: "text".into(),
            not_null: true,
            has_default: true,
        });
        assert_eq!(compare(claims(), Some(&found)), []);
    }
}
