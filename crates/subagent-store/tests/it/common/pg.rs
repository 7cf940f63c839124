//! A fresh PostgreSQL database per test or bench run (shared by `tests/it` and `benches`).

/// Creates the database `name` on the server of `base` (a `postgres://` URL); its URL.
pub(crate) async fn create_database(base: &str, name: &str) -> String {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(base)
        .await
        .expect("connect to PostgreSQL");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await
        .expect("create database");
    let (head, _) = base.rsplit_once('/').expect("database in URL");
    format!("{head}/{name}")
}
