//! `--demo`: the table a newcomer can query at once, test.user with 100,000
//! invented rows, created only when it does not exist yet.

use anyhow::Context;
use hsd_sqlite::{open_db, Synchronous};
use std::path::Path;

pub const DEMO_ROWS: i64 = 100_000;

const FIRST: &[&str] = &[
    "Ada", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ines", "Jonas",
    "Kemal", "Lena", "Mateo", "Nadia", "Oskar", "Priya", "Quinn", "Rosa", "Sven", "Tariq",
];
const LAST: &[&str] = &[
    "Abbott", "Berg", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Horvat", "Ivanova",
    "Jensen", "Kowalski", "Laine", "Moreau", "Novak", "Okafor", "Petrov", "Rossi", "Silva",
    "Tanaka", "Weber",
];

/// Creates test.user in `data_dir` unless it exists; returns whether it did.
pub(crate) fn ensure_demo(data_dir: &Path) -> anyhow::Result<bool> {
    let mut conn =
        open_db(data_dir, "test", true, Synchronous::Normal).context("opening test.sqlite")?;
    let exists: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'user'",
        [],
        |r| r.get(0),
    )?;
    if exists > 0 {
        return Ok(false);
    }
    let tx = conn.transaction()?;
    tx.execute_batch(
        "CREATE TABLE user (user_id INTEGER PRIMARY KEY AUTOINCREMENT, user_name TEXT, user_email TEXT, created TEXT);",
    )?;
    {
        let mut insert = tx.prepare("INSERT INTO user VALUES (?1, ?2, ?3, ?4)")?;
        for id in 1..=DEMO_ROWS {
            let first = FIRST[(id as usize * 7) % FIRST.len()];
            let last = LAST[(id as usize * 13 / 3) % LAST.len()];
            let name = format!("{first} {last}");
            let email = format!(
                "{}.{}{}@example.com",
                first.to_lowercase(),
                last.to_lowercase(),
                id
            );
            // Spread creation times over ~3 years from 2010-01-01, deterministically.
            let secs = id * 953 % (3 * 365 * 86_400);
            let (days, rem) = (secs / 86_400, secs % 86_400);
            let (y, m, d) = civil_from_days(days + 14_610); // 14610 = days from 1970 to 2010
            let created = format!(
                "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
                rem / 3600,
                rem / 60 % 60,
                rem % 60
            );
            insert.execute(rusqlite::params![id, name, email, created])?;
        }
    }
    tx.execute_batch("CREATE INDEX user_email ON user (user_email);")?;
    tx.commit()?;
    Ok(true)
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// What to paste into `nc -C 127.0.0.1 9998` (TABs written as real TABs).
pub(crate) fn usage_lines(read_port: u16) -> String {
    format!(
        "Try it:  nc -C 127.0.0.1 {read_port}   then type (TAB between fields):\n\
         P\t0\ttest\tuser\tPRIMARY\tuser_name,user_email,created\n\
         0\t=\t1\t101\n\
         0\t>=\t1\t100\t2\t0\n"
    )
}

#[cfg(test)]
mod tests {
    use super::civil_from_days;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(14_610), (2010, 1, 1));
        assert_eq!(civil_from_days(14_610 + 59), (2010, 3, 1));
    }
}
