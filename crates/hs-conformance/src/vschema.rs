//! How the Vitess run shards each table of the suite (docs/vitess.md): the
//! primary vindex its key's first column gets, chosen so that every spelling
//! the column takes for equal lands on one shard, and the Vitess sequence
//! that numbers its AUTO_INCREMENT column, kept in the unsharded keyspace of
//! scripts/vitess.sh and set back to where one server's counter stands after
//! each reset. Only the statements: `store` runs them through vtgate.

use anyhow::{bail, Result};

use crate::schema::{Column, Kind, Table};

/// The unsharded keyspace that holds the sequence tables (scripts/vitess.sh).
pub const SEQUENCE_KEYSPACE: &str = "seq";

/// Rows of a sequence a tablet takes at a time. Any size keeps the run
/// exact: a reset recreates the sequence table, which drops the tablet's
/// cached block with it.
const SEQUENCE_CACHE: u64 = 100;

/// The column the table is sharded by: its primary key's first column.
pub fn vindex_column(table: &Table) -> Result<&Column> {
    let name = table.primary().column(0);
    match table.column(name) {
        Some(c) => Ok(c),
        None => bail!("table {}: no column {name}", table.name),
    }
}

/// The Vitess vindex type for `column` of `table`: `hash` for integers
/// (vtgate reads the key as a number), `unicode_loose_xxhash` for text
/// under a case-insensitive collation (it hashes the key as such a
/// collation compares it: case folded, trailing spaces cut), `xxhash` for
/// binary text (its bytes are what compares).
pub fn vindex_type(table: &Table, column: &Column) -> Result<&'static str> {
    match column.kind {
        Kind::Int { .. } => Ok("hash"),
        Kind::Binary(_) | Kind::VarBinary(_) | Kind::Blob => Ok("xxhash"),
        Kind::Char(_) | Kind::VarChar(_) | Kind::Text => {
            if collation(table, column).ends_with("_bin") {
                Ok("xxhash")
            } else {
                Ok("unicode_loose_xxhash")
            }
        }
        other => bail!(
            "table {}: no vindex chosen for a key of kind {other:?}",
            table.name
        ),
    }
}

/// The collation a text column compares by: its own, else the table's.
fn collation(table: &Table, column: &Column) -> &'static str {
    let of = |text: &'static str| {
        let at = text.find("COLLATE")?;
        let rest = text[at + "COLLATE".len()..].trim_start_matches([' ', '=']);
        rest.split_whitespace().next()
    };
    of(column.mysql)
        .or_else(|| of(table.mysql_options))
        .unwrap_or("")
}

/// The AUTO_INCREMENT column, if the table has one.
pub fn auto_increment(table: &Table) -> Option<&Column> {
    table
        .columns
        .iter()
        .find(|c| c.mysql.contains("AUTO_INCREMENT"))
}

/// Where one server's counter stands after the seed rows: one past the
/// largest id they hold (1 for none).
pub fn next_id(table: &Table, column: &Column) -> Result<u64> {
    let mut next = 1;
    for v in table.seed_values(column.name).into_iter().flatten() {
        let text = String::from_utf8_lossy(&v);
        let Ok(id) = text.parse::<u64>() else {
            bail!("table {}: seed id {text:?} is not a number", table.name);
        };
        next = next.max(id + 1);
    }
    Ok(next)
}

/// The sequence table that numbers `table`'s rows.
pub fn sequence_name(table: &Table) -> String {
    format!("{}_seq", table.name)
}

/// The statements that shard `table` in `keyspace` and give it its
/// sequence; run once per keyspace (later runs answer that each is there).
pub fn shard_statements(keyspace: &str, table: &Table) -> Result<Vec<String>> {
    let column = vindex_column(table)?;
    let vindex = vindex_type(table, column)?;
    let name = table.name;
    let mut out = vec![format!(
        "ALTER VSCHEMA ON `{keyspace}`.`{name}` ADD VINDEX {vindex}(`{}`) USING {vindex}",
        column.name
    )];
    if let Some(auto) = auto_increment(table) {
        let seq = sequence_name(table);
        out.push(format!(
            "ALTER VSCHEMA ADD SEQUENCE `{SEQUENCE_KEYSPACE}`.`{seq}`"
        ));
        out.push(format!(
            "ALTER VSCHEMA ON `{keyspace}`.`{name}` ADD AUTO_INCREMENT `{}` USING `{SEQUENCE_KEYSPACE}`.`{seq}`",
            auto.name
        ));
    }
    Ok(out)
}

/// The statements that set `table`'s sequence to one past its seed rows'
/// largest id, as one server's counter is after a reset (empty without an
/// AUTO_INCREMENT column). The table is made anew, not updated: a tablet
/// keeps its cached block of ids and takes no lower value from the table,
/// but drops the block when the table is recreated.
pub fn sequence_reset(table: &Table) -> Result<Vec<String>> {
    let Some(auto) = auto_increment(table) else {
        return Ok(Vec::new());
    };
    let next = next_id(table, auto)?;
    let seq = format!("`{SEQUENCE_KEYSPACE}`.`{}`", sequence_name(table));
    Ok(vec![
        format!("DROP TABLE IF EXISTS {seq}"),
        format!(
            "CREATE TABLE {seq} (id INT NOT NULL, next_id BIGINT, cache BIGINT, PRIMARY KEY (id)) \
             COMMENT 'vitess_sequence'"
        ),
        format!("INSERT INTO {seq} (id, next_id, cache) VALUES (0, {next}, {SEQUENCE_CACHE})"),
    ])
}

/// The query that reads where `table`'s sequence stands, and where a reset
/// left it (None without an AUTO_INCREMENT column). A tablet moves the
/// table's `next_id` past the block of ids it takes, so an unmoved value
/// says no row was numbered since the reset.
pub fn sequence_probe(table: &Table) -> Result<Option<(String, u64)>> {
    let Some(auto) = auto_increment(table) else {
        return Ok(None);
    };
    Ok(Some((
        format!(
            "SELECT next_id FROM `{SEQUENCE_KEYSPACE}`.`{}` WHERE id = 0",
            sequence_name(table)
        ),
        next_id(table, auto)?,
    )))
}

/// True for the error vtgate gives when a vschema entry is there already
/// (a keyspace the suite ran on before).
pub fn already_there(error: &str) -> bool {
    error.contains("already")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::vitess_tables;

    fn table(name: &str) -> Table {
        vitess_tables()
            .into_iter()
            .find(|t| t.name == name)
            .expect("a table of the Vitess run")
    }

    #[test]
    fn every_table_of_the_run_gets_a_vindex_for_its_key() {
        for t in vitess_tables() {
            let stmts = shard_statements("ks", &t).expect("a vindex");
            assert!(stmts[0].contains("ADD VINDEX"), "{}", t.name);
        }
    }

    #[test]
    fn vindexes_follow_the_key_kind_and_collation() {
        let vindex = |name: &str| {
            let t = table(name);
            let c = vindex_column(&t).expect("column");
            vindex_type(&t, c).expect("vindex")
        };
        assert_eq!(vindex("ints"), "hash");
        assert_eq!(vindex("times"), "hash");
        assert_eq!(vindex("latin"), "unicode_loose_xxhash");
        assert_eq!(vindex("vitess_pairs"), "hash");
        let mut bin = table("latin");
        bin.mysql_options = "DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";
        assert_eq!(
            vindex_type(&bin, &bin.columns[0]).expect("vindex"),
            "xxhash"
        );
    }

    #[test]
    fn sequences_start_past_the_seed_rows() {
        let ints = table("ints");
        let stmts = sequence_reset(&ints).expect("statements");
        assert!(stmts[2].ends_with("VALUES (0, 10, 100)"), "{stmts:?}");
        assert!(stmts[0].contains("`seq`.`ints_seq`"), "{stmts:?}");
        assert!(sequence_reset(&table("nums")).expect("none").is_empty());
        let shard = shard_statements("ks", &ints).expect("statements");
        assert_eq!(
            shard[2],
            "ALTER VSCHEMA ON `ks`.`ints` ADD AUTO_INCREMENT `id` USING `seq`.`ints_seq`"
        );
    }
}
