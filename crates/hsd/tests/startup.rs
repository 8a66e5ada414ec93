//! Start-up checks: bad settings stop hsd before it listens, with one line
//! on stderr saying what to change; risky but legal ones start with a
//! warning; secrets never show in help, logs or errors.

mod common;

use common::{run_hsd, HsdRun};
use std::path::Path;

/// `hsd serve` on a fresh data dir, ports picked by the system.
fn serve(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> HsdRun {
    let data = dir.join("data");
    let mut args = vec![
        "serve",
        "--address",
        "127.0.0.1",
        "--port",
        "0",
        "--port-wr",
        "0",
        "--data-dir",
        data.to_str().expect("utf-8 path"),
    ];
    args.extend_from_slice(extra);
    run_hsd(&args, env)
}

/// hsd exited 1 before listening, and stderr is the single line
/// `hsd: <message>` that starts with `want`.
#[track_caller]
fn assert_refused(run: &HsdRun, want: &str) -> String {
    assert_eq!(
        run.code,
        Some(1),
        "hsd should exit 1; ready={:?} stderr={}",
        run.ready,
        run.stderr
    );
    assert!(
        run.stdout.is_empty(),
        "nothing may be printed on stdout (no ready line) before the error: {:?}",
        run.stdout
    );
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "want one line on stderr, got {lines:?}");
    let message = lines[0]
        .strip_prefix("hsd: ")
        .unwrap_or_else(|| panic!("no `hsd: ` prefix: {:?}", lines[0]));
    assert!(
        message.starts_with(want),
        "want a line starting {want:?}, got {message:?}"
    );
    message.to_string()
}

#[track_caller]
fn assert_started(run: &HsdRun) {
    assert!(
        run.ready.is_some(),
        "hsd should start; code={:?} stderr={}",
        run.code,
        run.stderr
    );
}

#[test]
fn thread_counts_out_of_range_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (args, want) in [
        (
            &["--threads-wr", "100000"][..],
            "--threads-wr must be 1 to 64, not 100000",
        ),
        (
            &["--threads", "100000"][..],
            "--threads must be 1 to 256, not 100000",
        ),
        (&["--threads", "0"][..], "--threads must be 1 to 256, not 0"),
        (
            &["--threads-wr", "0"][..],
            "--threads-wr must be 1 to 64, not 0",
        ),
        (
            &["--mysql-pool", "1000"][..],
            "--mysql-pool must be 1 to 256, not 1000",
        ),
        (
            &["--max-response-bytes", "100"][..],
            "--max-response-bytes must be at least 4096, not 100",
        ),
        (
            &["--sqlite-mmap-mib", "4096"][..],
            "--sqlite-mmap-mib must be 0 to 2048, not 4096",
        ),
        (
            &["--write-groups", "2"][..],
            "--write-groups applies to a MySQL backend: the embedded store has one writer per db file",
        ),
        (
            &["--backend", "mysql://u@127.0.0.1:1", "--write-groups", "17"][..],
            "--write-groups must be 1 to 16, not 17",
        ),
    ] {
        assert_refused(&serve(dir.path(), args, &[]), want);
    }
    // The same from the environment and from a config file.
    assert_refused(
        &serve(dir.path(), &[], &[("HSD_THREADS_WR", "100000")]),
        "--threads-wr must be 1 to 64, not 100000",
    );
    let config = dir.path().join("hsd.toml");
    std::fs::write(&config, "threads = 5000\n").unwrap();
    assert_refused(
        &serve(dir.path(), &["--config", config.to_str().unwrap()], &[]),
        "--threads must be 1 to 256, not 5000",
    );
    // The limits themselves are accepted.
    assert_started(&serve(
        dir.path(),
        &["--threads", "256", "--threads-wr", "64"],
        &[],
    ));
}

#[test]
fn empty_secrets_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let newline = dir.path().join("newline");
    std::fs::write(&newline, "\n").unwrap();
    let crlf = dir.path().join("crlf");
    std::fs::write(&crlf, "\r\n").unwrap();
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "").unwrap();
    let config = dir.path().join("hsd.toml");
    std::fs::write(&config, "plain-secret-wr = \"\"\n").unwrap();
    let path = |p: &Path| p.to_str().unwrap().to_string();
    // (arguments, environment, the error's start)
    type Case<'a> = (Vec<String>, Vec<(&'a str, &'a str)>, String);
    let cases: Vec<Case> = vec![
        (
            vec!["--plain-secret".into(), String::new()],
            vec![],
            "--plain-secret (HSD_PLAIN_SECRET) is empty".into(),
        ),
        (
            vec!["--plain-secret-wr".into(), String::new()],
            vec![],
            "--plain-secret-wr (HSD_PLAIN_SECRET_WR) is empty".into(),
        ),
        (
            vec![],
            vec![("HSD_PLAIN_SECRET", "")],
            "--plain-secret (HSD_PLAIN_SECRET) is empty".into(),
        ),
        (
            vec![],
            vec![("HSD_PLAIN_SECRET_WR", "")],
            "--plain-secret-wr (HSD_PLAIN_SECRET_WR) is empty".into(),
        ),
        (
            vec!["--plain-secret-file".into(), path(&newline)],
            vec![],
            format!("--plain-secret-file {} is empty", newline.display()),
        ),
        (
            vec!["--plain-secret-wr-file".into(), path(&crlf)],
            vec![],
            format!("--plain-secret-wr-file {} is empty", crlf.display()),
        ),
        (
            vec![],
            vec![("HSD_PLAIN_SECRET_FILE", empty.to_str().unwrap())],
            format!("--plain-secret-file {} is empty", empty.display()),
        ),
        (
            vec!["--config".into(), path(&config)],
            vec![],
            "--plain-secret-wr (HSD_PLAIN_SECRET_WR) is empty".into(),
        ),
    ];
    for (args, env, want) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let message = assert_refused(&serve(dir.path(), &args, &env), &want);
        assert!(
            message.contains("an empty secret would let any client in"),
            "{message}"
        );
    }
}

#[test]
fn one_secret_alone_warns_about_the_open_port() {
    let dir = tempfile::tempdir().unwrap();
    let run = serve(dir.path(), &["--plain-secret", "s3cret"], &[]);
    assert_started(&run);
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("has a secret"))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning: {}", run.stderr);
    assert!(warnings[0].contains(" WARN "), "{}", warnings[0]);
    assert!(
        warnings[0].contains(
            "only the read port has a secret: the write port 127.0.0.1:0 takes reads AND writes from anyone who can connect"
        ) && warnings[0].contains("set --plain-secret-wr"),
        "{}",
        warnings[0]
    );
    assert!(!run.stderr.contains("s3cret"), "{}", run.stderr);

    let run = serve(dir.path(), &["--plain-secret-wr", "s3cret"], &[]);
    assert_started(&run);
    assert!(
        run.stderr.lines().any(|l| l.contains("WARN")
            && l.contains("only the write port has a secret: the read port 127.0.0.1:0 serves reads to anyone")),
        "{}",
        run.stderr
    );

    // Both secrets, or none: nothing to warn about.
    for args in [&["--plain-secret", "a", "--plain-secret-wr", "b"][..], &[]] {
        let run = serve(dir.path(), args, &[]);
        assert_started(&run);
        assert!(!run.stderr.contains("has a secret"), "{}", run.stderr);
    }
}

/// Logs into a pipe or file carry no ANSI colour codes.
#[test]
fn logs_to_a_pipe_have_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let run = serve(dir.path(), &["--plain-secret", "x"], &[]);
    assert_started(&run);
    assert!(run.stderr.contains(" WARN "), "{}", run.stderr);
    assert!(
        !run.stderr.contains('\x1b'),
        "escape codes in piped logs: {:?}",
        run.stderr
    );
}

#[test]
fn secrets_and_passwords_stay_out_of_help_and_logs() {
    let env = [
        ("HSD_BACKEND", "mysql://app:hunter2@db.example:3306"),
        ("HSD_PLAIN_SECRET", "read-s3cret"),
        ("HSD_PLAIN_SECRET_WR", "write-s3cret"),
    ];
    let help = run_hsd(&["serve", "--help"], &env);
    assert_eq!(help.code, Some(0), "{}", help.stderr);
    for secret in ["hunter2", "read-s3cret", "write-s3cret"] {
        assert!(!help.stdout.contains(secret), "{secret} in --help");
    }
    for want in [
        "--backend-password-file",
        "[env: HSD_BACKEND]",
        "1 to 256",
        "1 to 64",
    ] {
        assert!(help.stdout.contains(want), "no {want:?} in {}", help.stdout);
    }
    // And it ends by saying how to start.
    let last = help.stdout.lines().last().unwrap_or_default();
    assert!(last.starts_with("To start: `hsd serve --demo`"), "{last}");

    // Debug logs print the settings: the secrets and the password as ***.
    let dir = tempfile::tempdir().unwrap();
    let port = closed_port();
    let backend = format!("mysql://app:hunter2@127.0.0.1:{port}");
    let run = serve(
        dir.path(),
        &["--backend", &backend],
        &[
            ("HSD_PLAIN_SECRET", "read-s3cret"),
            ("HSD_PLAIN_SECRET_WR", "write-s3cret"),
        ],
    );
    let run_v = run_hsd(
        &[
            "-v",
            "serve",
            "--port",
            "0",
            "--port-wr",
            "0",
            "--backend",
            &backend,
            "--plain-secret",
            "read-s3cret",
            "--plain-secret-wr",
            "write-s3cret",
        ],
        &[],
    );
    for run in [&run, &run_v] {
        assert_started(run);
        for secret in ["hunter2", "read-s3cret", "write-s3cret"] {
            assert!(
                !run.stderr.contains(secret) && !run.stdout.contains(secret),
                "{secret} printed: {}{}",
                run.stdout,
                run.stderr
            );
        }
    }
    assert!(
        run_v.stderr.contains("Secret(***)") && run_v.stderr.contains("password: \"***\""),
        "the settings are logged at debug level, redacted: {}",
        run_v.stderr
    );

    // Passwords holding URL delimiters as they are (`/ # @ :`) or
    // percent-encoded stay hidden too, in every log line.
    for (password, hidden) in [
        ("pa/ss#w@r:d", &["pa/ss", "ss#w", "w@r"][..]),
        ("p%40ss%2Fw%3Ard%25", &["p%40ss", "p@ss", "ss/w", "%25"][..]),
    ] {
        let backend = format!("mysql://app:{password}@127.0.0.1:{port}");
        let run = run_hsd(
            &[
                "-v",
                "serve",
                "--port",
                "0",
                "--port-wr",
                "0",
                "--backend",
                &backend,
            ],
            &[("RUST_LOG", "debug")],
        );
        assert_started(&run);
        for h in hidden {
            assert!(
                !run.stderr.contains(h) && !run.stdout.contains(h),
                "{h} of {password} printed: {}{}",
                run.stdout,
                run.stderr
            );
        }
        assert!(
            run.stdout.contains("backend=mysql://app:***@127.0.0.1"),
            "{}",
            run.stdout
        );
    }
}

#[test]
fn backends_hsd_cannot_use_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    // Once `sqlite:ANYTHING` was taken as sqlite and its path ignored.
    assert_refused(
        &serve(dir.path(), &["--backend", "sqlite:/elsewhere"], &[]),
        "--backend \"sqlite\"... is not a backend: use sqlite",
    );
    // A typo must not echo what may be a password.
    let run = serve(dir.path(), &["--backend", "myslq://app:hunter2@db"], &[]);
    let message = assert_refused(&run, "--backend \"myslq\"... is not a backend");
    assert!(!message.contains("hunter2"), "{message}");
    // An empty host once meant 127.0.0.1:3306 without a word.
    let message = assert_refused(
        &serve(dir.path(), &["--backend", "mysql://u:hunter2@"], &[]),
        "--backend: invalid MySQL URL: no host",
    );
    assert!(!message.contains("hunter2"), "{message}");
}

/// A port nothing listens on (bound, then closed).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn an_unreachable_backend_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let port = closed_port();
    let backend = format!("mysql://app@127.0.0.1:{port}");
    let run = serve(dir.path(), &["--backend", &backend], &[]);
    assert_started(&run);
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("cannot reach the MySQL server"))
        .unwrap_or_else(|| panic!("no warning: {}", run.stderr));
    assert!(line.contains(" WARN "), "{line}");
    assert!(
        line.contains(&format!("at 127.0.0.1:{port} ("))
            && line.ends_with(
                "hsd starts anyway and connects once it is up: start that server, or fix the host and port in --backend"
            ),
        "{line}"
    );
}

#[test]
fn usage_errors_end_with_a_hint() {
    let run = run_hsd(&["serve", "--prot", "9998"], &[]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr
            .contains("error: unexpected argument '--prot' found")
            && run
                .stderr
                .contains("tip: a similar argument exists: '--port'"),
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stderr.trim_end().lines().last(),
        Some("For more information, try '--help'.")
    );
    let run = run_hsd(&["--help"], &[]);
    assert_eq!(run.code, Some(0));
    let last = run.stdout.lines().last().unwrap_or_default();
    assert!(last.starts_with("To start: `hsd serve --demo`"), "{last}");
}

#[test]
fn backend_password_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let pw = dir.path().join("pw");
    std::fs::write(&pw, "from-file\n").unwrap();
    let pw = pw.to_str().unwrap();
    // A URL with its own password and a file: which one was meant?
    let message = assert_refused(
        &serve(
            dir.path(),
            &[
                "--backend",
                "mysql://app:in-url@127.0.0.1:3306",
                "--backend-password-file",
                pw,
            ],
            &[],
        ),
        "the --backend URL mysql://app:***@127.0.0.1:3306 already has a password",
    );
    assert!(!message.contains("in-url"), "{message}");
    assert_refused(
        &serve(
            dir.path(),
            &["--backend-password-file", pw],
            &[("HSD_BACKEND", "mysql://127.0.0.1:3306")],
        ),
        "the --backend URL names no user",
    );
    assert_refused(
        &serve(dir.path(), &["--backend-password-file", pw], &[]),
        "--backend-password-file needs a mysql:// backend",
    );
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "\n").unwrap();
    assert_refused(
        &serve(
            dir.path(),
            &[
                "--backend",
                "mysql://app@127.0.0.1:3306",
                "--backend-password-file",
                empty.to_str().unwrap(),
            ],
            &[],
        ),
        &format!("backend password file {} is empty", empty.display()),
    );

    // Against the test MariaDB: the password from the file logs hsd in; a
    // wrong one stops it at start, without printing it.
    let Some(url) = common::mysql_url() else {
        return;
    };
    let (without, password) = split_password(&url);
    let good = dir.path().join("good");
    std::fs::write(&good, format!("{password}\n")).unwrap();
    // Readable by its owner only: one every user may read is warned of.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&good, std::fs::Permissions::from_mode(0o600)).unwrap();
    let run = serve(
        dir.path(),
        &[
            "--backend",
            &without,
            "--backend-password-file",
            good.to_str().unwrap(),
        ],
        &[],
    );
    assert_started(&run);
    assert!(!run.stderr.contains("WARN"), "{}", run.stderr);
    let bad = dir.path().join("bad");
    std::fs::write(&bad, "not-the-password-42\n").unwrap();
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o600)).unwrap();
    let run = serve(
        dir.path(),
        &["--backend-password-file", bad.to_str().unwrap()],
        &[("HSD_BACKEND", &without)],
    );
    let message = assert_refused(&run, "cannot use mysql://");
    assert!(message.contains("Access denied"), "{message}");
    assert!(!run.stderr.contains("not-the-password-42"), "{message}");
}

/// `mysql://user:pw@rest` -> (`mysql://user@rest`, `pw`).
fn split_password(url: &str) -> (String, String) {
    let rest = url.strip_prefix("mysql://").expect("mysql:// URL");
    let at = rest.rfind('@').expect("URL with a user");
    let (user, password) = rest[..at].split_once(':').expect("URL with a password");
    (
        format!("mysql://{user}{}", &rest[at..]),
        password.to_string(),
    )
}

#[test]
fn bad_tls_files_stop_hsd_before_it_listens() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let a = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let b = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = dir.path().join("cert.pem");
    let other_key = dir.path().join("other-key.pem");
    std::fs::write(&cert, a.cert.pem()).unwrap();
    std::fs::write(&other_key, b.key_pair.serialize_pem()).unwrap();
    let missing = dir.path().join("missing.pem");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    for (c, k, want) in [
        (
            s(&junk),
            s(&other_key),
            format!("--tls-cert {} holds no PEM certificate", junk.display()),
        ),
        (
            s(&cert),
            s(&junk),
            format!("--tls-key {} holds no PEM private key", junk.display()),
        ),
        (
            s(&missing),
            s(&other_key),
            format!("cannot read --tls-cert {}", missing.display()),
        ),
        (
            s(&cert),
            s(&other_key),
            format!(
                "--tls-cert {} and --tls-key {} do not make a pair",
                cert.display(),
                other_key.display()
            ),
        ),
    ] {
        assert_refused(
            &serve(dir.path(), &["--tls-cert", &c, "--tls-key", &k], &[]),
            &want,
        );
    }
}

#[test]
fn an_unwritable_data_dir_stops_hsd_at_start() {
    let dir = tempfile::tempdir().unwrap();
    // /proc takes no new files, even from root.
    let run = run_hsd(
        &[
            "serve",
            "--port",
            "0",
            "--port-wr",
            "0",
            "--data-dir",
            "/proc",
        ],
        &[],
    );
    let message = assert_refused(&run, "data directory /proc is not writable (");
    assert!(
        message.ends_with("fix its permissions or choose another --data-dir"),
        "{message}"
    );
    // A data dir that cannot be made (a file is in the way).
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let below = file.join("data");
    assert_refused(
        &run_hsd(
            &[
                "serve",
                "--port",
                "0",
                "--port-wr",
                "0",
                "--data-dir",
                below.to_str().unwrap(),
            ],
            &[],
        ),
        &format!("cannot create data directory {}", below.display()),
    );
    // Without root, permissions are enough to show it.
    if unsafe { libc::geteuid() } != 0 {
        use std::os::unix::fs::PermissionsExt;
        let ro = dir.path().join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        assert_refused(
            &run_hsd(
                &[
                    "serve",
                    "--port",
                    "0",
                    "--port-wr",
                    "0",
                    "--data-dir",
                    ro.to_str().unwrap(),
                ],
                &[],
            ),
            &format!("data directory {} is not writable", ro.display()),
        );
    }
    // A MySQL backend does not need the data dir.
    let port = closed_port();
    let backend = format!("mysql://app@127.0.0.1:{port}");
    let run = run_hsd(
        &[
            "serve",
            "--port",
            "0",
            "--port-wr",
            "0",
            "--data-dir",
            "/proc",
            "--backend",
            &backend,
        ],
        &[],
    );
    assert_started(&run);
}

/// A full disk is no reason to stop: the data is there to read. hsd starts
/// with one warning saying why writes will fail, serves reads, and answers
/// each write the error a full disk gives it (`1 1 13`, SQLite's "database
/// or disk is full"), as it does when the disk fills up while it runs.
#[test]
fn a_full_data_disk_starts_hsd_for_reads_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let disk = common::SmallDisk::mount(&dir.path().join("small"), 1 << 20);
    let data = disk.dir.to_str().expect("utf-8 path").to_string();
    let sql = |stmt: &str| {
        let run = run_hsd(&["sql", "--data-dir", &data, "test", stmt], &[]);
        assert_eq!(run.code, Some(0), "{stmt}: {}", run.stderr);
    };
    sql("CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT)");
    sql("INSERT INTO kv VALUES (1, 'one'), (2, 'two')");
    let args = ["--data-dir", data.as_str()];
    // hsd reads the file once and is killed, as a crash or a kill on a
    // disk that filled up leaves it: the db's -wal and -shm stay.
    {
        let hsd = common::spawn_hsd(&args);
        let mut r = common::blocking::Hs::connect(&hsd.read);
        assert_eq!(r.q("P|1|test|kv|PRIMARY|k,v"), "0|1");
        assert_eq!(r.q("1|=|1|1"), "0|2|1|one");
    }
    disk.fill("filler");

    let run = run_hsd(
        &[
            "serve",
            "--port",
            "0",
            "--port-wr",
            "0",
            "--data-dir",
            &data,
        ],
        &[],
    );
    assert_started(&run);
    let warnings: Vec<&str> = run.stderr.lines().filter(|l| l.contains("WARN")).collect();
    assert_eq!(warnings.len(), 1, "one warning: {}", run.stderr);
    assert!(
        warnings[0].contains(&format!("data directory {data} is on a full disk ("))
            && warnings[0].ends_with("): hsd serves reads, but writes fail until space is freed"),
        "{}",
        warnings[0]
    );

    let hsd = common::spawn_hsd(&args);
    let mut r = common::blocking::Hs::connect(&hsd.read);
    assert_eq!(r.q("P|1|test|kv|PRIMARY|k,v"), "0|1");
    assert_eq!(r.q("1|>=|1|0|10|0"), "0|2|1|one|2|two");
    let mut w = common::blocking::Hs::connect(&hsd.write);
    assert_eq!(w.q("P|1|test|kv|PRIMARY|k,v"), "0|1");
    assert_eq!(w.q("1|+|2|3|three"), "1|1|13");
    assert_eq!(w.q("1|=|1|1|1|0|U|1|uno"), "1|1|13");
    // Nothing changed, and reads on the write port go on.
    assert_eq!(w.q("1|>=|1|0|10|0"), "0|2|1|one|2|two");
    // Once space is freed, writes succeed again.
    std::fs::remove_file(disk.dir.join("filler")).expect("free the disk");
    assert_eq!(w.q("1|+|2|3|three"), "0|1");
    assert_eq!(r.q("1|>=|1|0|10|0"), "0|2|1|one|2|two|3|three");
}

#[test]
fn hsd_sql_refuses_a_missing_db_unless_creating() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let d = data.to_str().unwrap();
    let sql = |db: &str, stmt: &str| run_hsd(&["sql", "--data-dir", d, db, stmt], &[]);

    // No data dir yet: a SELECT makes nothing.
    let message = assert_refused(&sql("test", "SELECT 1"), "no database \"test\" in ");
    assert!(message.contains("it holds no db"), "{message}");
    assert!(!data.exists(), "the data dir was created");

    let run = sql("test", "CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT)");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let run = sql("test", "INSERT INTO kv VALUES (1, 'one'); SELECT v FROM kv");
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), "one\n"));

    // A mistyped name: an error naming the dbs there are, and no new file.
    let message = assert_refused(&sql("tset", "SELECT v FROM kv"), "no database \"tset\" in ");
    assert!(
        message.ends_with("(dbs there: test); a new db is made only by a CREATE statement"),
        "{message}"
    );
    assert!(!data.join("tset.sqlite").exists());
    assert_refused(
        &sql("../x", "CREATE TABLE t (x)"),
        "invalid db name \"../x\"",
    );
}
