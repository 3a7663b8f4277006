#!/usr/bin/env bash
# Starts the onceflow-postgres image's server.
#
# 1. On the first start (empty PGDATA): initdb with SCRAM passwords, the superuser POSTGRES_USER with
#    the password of POSTGRES_PASSWORD_FILE or POSTGRES_PASSWORD (refused when neither is set), and
#    pg_hba.conf that takes password logins (scram-sha-256) from any address and nothing else.
# 2. Create POSTGRES_DB owned by POSTGRES_USER, with the server listening on its socket only.
# 3. exec postgres on every interface with the arguments given (e.g. -c max_prepared_transactions=64).
set -euo pipefail

: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  # Step 1
  if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then
    [ -r "$POSTGRES_PASSWORD_FILE" ] || { echo "postgres-start: POSTGRES_PASSWORD_FILE=$POSTGRES_PASSWORD_FILE cannot be read" >&2; exit 2; }
    password=$(cat "$POSTGRES_PASSWORD_FILE")
  else
    password=${POSTGRES_PASSWORD:-}
  fi
  [ -n "$password" ] || { echo "postgres-start: set POSTGRES_PASSWORD_FILE or POSTGRES_PASSWORD (no password, no server)" >&2; exit 2; }
  pwfile=$(mktemp); printf '%s\n' "$password" >"$pwfile"
  initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=scram-sha-256 --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 -D "$PGDATA" >/dev/null
  rm -f "$pwfile"
  printf 'local all all scram-sha-256\nhost all all 0.0.0.0/0 scram-sha-256\nhost all all ::/0 scram-sha-256\n' \
    >"$PGDATA/pg_hba.conf"
  # Step 2
  pg_ctl -D "$PGDATA" -w -o "-c listen_addresses=''" start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then
    PGPASSWORD=$password psql -v ON_ERROR_STOP=1 -q -U "$POSTGRES_USER" -d postgres \
      -c "CREATE DATABASE \"$POSTGRES_DB\" OWNER \"$POSTGRES_USER\""
  fi
  pg_ctl -D "$PGDATA" -w -m fast stop >/dev/null
  echo "postgres-start: initialized $PGDATA (user $POSTGRES_USER, database $POSTGRES_DB)"
fi
# Step 3
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
