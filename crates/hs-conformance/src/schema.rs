//! Table descriptions the generator draws from: columns with their value
//! kinds, indexes in the order the database numbers them, seed rows, and the
//! CREATE TABLE text for MariaDB and for SQLite.

/// What kind of values a column holds; drives which edge values are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int { bytes: u8, unsigned: bool },
    Decimal,
    Float,
    Double,
    Date,
    DateTime,
    Timestamp,
    Time,
    Year,
    Char(u8),
    VarChar(u8),
    Binary(u8),
    VarBinary(u8),
    Text,
    Blob,
    Enum,
}

impl Kind {
    pub fn is_integer(self) -> bool {
        matches!(self, Kind::Int { .. } | Kind::Year)
    }

    /// Filtering on these answers `filterblob` on the original.
    pub fn is_blob(self) -> bool {
        matches!(self, Kind::Text | Kind::Blob)
    }

    pub fn is_text(self) -> bool {
        matches!(
            self,
            Kind::Char(_)
                | Kind::VarChar(_)
                | Kind::Binary(_)
                | Kind::VarBinary(_)
                | Kind::Text
                | Kind::Blob
                | Kind::Enum
        )
    }
}

#[derive(Debug, Clone)]
pub struct Column {
    pub name: &'static str,
    /// Type and attributes as written in MariaDB's CREATE TABLE.
    pub mysql: &'static str,
    /// Type and attributes for SQLite (only tables of the embedded-store set).
    pub sqlite: &'static str,
    pub kind: Kind,
    pub nullable: bool,
}

#[derive(Debug, Clone)]
pub struct Index {
    /// `PRIMARY` for the primary key.
    pub name: &'static str,
    /// Column names; an entry may carry a prefix length, e.g. `tx(4)`.
    pub parts: Vec<&'static str>,
    pub unique: bool,
}

impl Index {
    /// The column name of key part `i` (without a prefix length).
    pub fn column(&self, i: usize) -> &'static str {
        let p = self.parts[i];
        match p.find('(') {
            Some(at) => &p[..at],
            None => p,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Table {
    pub name: &'static str,
    pub columns: Vec<Column>,
    /// In MariaDB's numbering: PRIMARY first, then the others as declared
    /// (unique before non-unique, as InnoDB sorts them).
    pub indexes: Vec<Index>,
    /// Table options for MariaDB, e.g. the character set.
    pub mysql_options: &'static str,
    /// Rows inserted at every reset, in column order, as SQL text (None = NULL).
    pub seed_rows: Vec<Vec<Option<&'static str>>>,
}

impl Table {
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    pub fn primary(&self) -> &Index {
        &self.indexes[0]
    }

    /// The values the seed rows hold in `column`, as bytes.
    pub fn seed_values(&self, column: &str) -> Vec<Option<Vec<u8>>> {
        let Some(pos) = self.columns.iter().position(|c| c.name == column) else {
            return Vec::new();
        };
        self.seed_rows
            .iter()
            .map(|r| r[pos].map(|v| v.as_bytes().to_vec()))
            .collect()
    }

    pub fn mysql_create(&self) -> String {
        let mut parts: Vec<String> = self
            .columns
            .iter()
            .map(|c| format!("`{}` {}", c.name, c.mysql))
            .collect();
        for ix in &self.indexes {
            let cols = ix
                .parts
                .iter()
                .map(|p| quote_part(p))
                .collect::<Vec<_>>()
                .join(",");
            if ix.name == "PRIMARY" {
                parts.push(format!("PRIMARY KEY ({cols})"));
            } else if ix.unique {
                parts.push(format!("UNIQUE KEY `{}` ({cols})", ix.name));
            } else {
                parts.push(format!("KEY `{}` ({cols})", ix.name));
            }
        }
        format!(
            "CREATE TABLE `{}` (\n  {}\n) ENGINE=InnoDB {}",
            self.name,
            parts.join(",\n  "),
            self.mysql_options
        )
    }

    /// CREATE TABLE and CREATE INDEX statements for SQLite. The primary key is
    /// declared inline by the column's own `sqlite` text when it is a rowid
    /// alias, otherwise as a table constraint.
    pub fn sqlite_create(&self) -> Vec<String> {
        let mut cols: Vec<String> = self
            .columns
            .iter()
            .map(|c| format!("\"{}\" {}", c.name, c.sqlite))
            .collect();
        let inline_pk = self
            .columns
            .iter()
            .any(|c| c.sqlite.contains("PRIMARY KEY"));
        if !inline_pk {
            cols.push(format!("PRIMARY KEY ({})", self.primary().parts.join(",")));
        }
        let mut out = vec![format!(
            "CREATE TABLE \"{}\" ({})",
            self.name,
            cols.join(", ")
        )];
        for ix in self.indexes.iter().skip(1) {
            out.push(format!(
                "CREATE {}INDEX \"{}\" ON \"{}\" ({})",
                if ix.unique { "UNIQUE " } else { "" },
                ix.name,
                self.name,
                ix.parts.join(",")
            ));
        }
        out
    }
}

fn quote_part(p: &str) -> String {
    match p.find('(') {
        Some(at) => format!("`{}`{}", &p[..at], &p[at..]),
        None => format!("`{p}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        Table {
            name: "t",
            columns: vec![
                Column {
                    name: "id",
                    mysql: "INT NOT NULL",
                    sqlite: "INTEGER PRIMARY KEY AUTOINCREMENT",
                    kind: Kind::Int {
                        bytes: 4,
                        unsigned: false,
                    },
                    nullable: false,
                },
                Column {
                    name: "tx",
                    mysql: "TEXT",
                    sqlite: "TEXT",
                    kind: Kind::Text,
                    nullable: true,
                },
            ],
            indexes: vec![
                Index {
                    name: "PRIMARY",
                    parts: vec!["id"],
                    unique: true,
                },
                Index {
                    name: "k_tx",
                    parts: vec!["tx(4)"],
                    unique: false,
                },
            ],
            mysql_options: "DEFAULT CHARSET=latin1",
            seed_rows: vec![vec![Some("1"), None]],
        }
    }

    #[test]
    fn mysql_ddl_quotes_prefix_parts() {
        let ddl = table().mysql_create();
        assert!(ddl.contains("KEY `k_tx` (`tx`(4))"), "{ddl}");
        assert!(ddl.contains("PRIMARY KEY (`id`)"), "{ddl}");
        assert!(ddl.ends_with("DEFAULT CHARSET=latin1"));
    }

    #[test]
    fn index_column_strips_prefix() {
        assert_eq!(table().indexes[1].column(0), "tx");
    }

    #[test]
    fn seed_values_by_column() {
        assert_eq!(table().seed_values("tx"), vec![None]);
        assert_eq!(table().seed_values("id"), vec![Some(b"1".to_vec())]);
    }
}
