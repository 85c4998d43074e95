/**
 * Real servers for integration tests, each run in its own namespace (Redis key prefix, PostgreSQL
 * schema, MariaDB database) that is dropped afterwards. A server that is down fails the run with the
 * command that starts it: nothing is skipped silently.
 */

import { randomUUID } from 'node:crypto'
import { rm } from 'node:fs/promises'
import { createConnection } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const REDIS_URL = 'redis://127.0.0.1:6379'
export const POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test'
export const MARIADB_URL = 'mysql://root@127.0.0.1:3306/test'

const START_COMMANDS: Record<string, string> = {
  6379: 'redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log',
  5432: 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start',
  3306: 'start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd',
}

/** Rejects with the start command when nothing listens on 127.0.0.1:`port`; a store without a server (`undefined`) is there. */
export const requireServer = (port: number | undefined) =>
  new Promise<void>((resolve, reject) => {
    if (port === undefined) return resolve()
    const socket = createConnection({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve()
    })
    socket.once('error', () => reject(new Error(`Nothing listens on 127.0.0.1:${port}; start it with: ${START_COMMANDS[port]}`)))
  })

/** A fresh namespace name, valid as a Redis prefix, a SQL schema and a database name. */
export const uniqueNamespace = (kind: string) => `mg_${kind}_${randomUUID().replaceAll('-', '').slice(0, 16)}`

/** The shared stores several gateway processes run on, configured as the runner reads them. */
export interface ProcessStore {
  name: string
  /** The server's port; none for SQLite, a file the processes of this machine share. */
  port: number | undefined
  /** The runner's environment for a store in `namespace`, reached on `port` (a fault proxy's; default the server's). */
  env: (namespace: string, port?: number) => Record<string, string>
  drop: (namespace: string) => Promise<void>
}

export const PROCESS_STORES: ProcessStore[] = [
  {
    name: 'Redis',
    port: 6379,
    env: (namespace, port = 6379) => ({ MODELGATE_STORAGE: `redis://127.0.0.1:${port}`, MODELGATE_REDIS_PREFIX: `${namespace}:` }),
    drop: (namespace) => dropRedisPrefix(`${namespace}:`),
  },
  {
    name: 'PostgreSQL',
    port: 5432,
    env: (namespace, port = 5432) => ({ MODELGATE_STORAGE: `postgres://postgres@127.0.0.1:${port}/test`, MODELGATE_SQL_SCHEMA: namespace }),
    drop: (namespace) => dropPostgresSchema(namespace),
  },
  {
    name: 'MariaDB',
    port: 3306,
    // On MySQL and MariaDB the schema is a database of its own, created by the first gateway that starts.
    env: (namespace, port = 3306) => ({ MODELGATE_STORAGE: `mysql://root@127.0.0.1:${port}/test`, MODELGATE_SQL_SCHEMA: namespace }),
    drop: (namespace) => dropMariadbDatabase(namespace),
  },
  {
    name: 'SQLite',
    port: undefined,
    env: (namespace) => ({ MODELGATE_STORAGE: `sqlite:${join(tmpdir(), namespace, 'modelgate.db')}` }),
    drop: (namespace) => rm(join(tmpdir(), namespace), { recursive: true, force: true }),
  },
]

/** The stores behind a server on a port, which a fault proxy can stand in front of (SQLite is a file). */
export const NETWORKED_STORES = PROCESS_STORES.filter((store): store is ProcessStore & { port: number } => store.port !== undefined)

/** Removes every Redis key under `prefix`. */
export const dropRedisPrefix = async (prefix: string) => {
  const { default: Redis } = await import('ioredis')
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 })
  await redis.connect()
  try {
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
      cursor = next
      if (keys.length > 0) await redis.unlink(...keys)
    } while (cursor !== '0')
  } finally {
    redis.disconnect()
  }
}

/** Drops a PostgreSQL schema and everything in it. */
export const dropPostgresSchema = async (schema: string) => {
  const { default: postgres } = await import('postgres')
  const sql = postgres(POSTGRES_URL, { max: 1, onnotice: () => {} })
  try {
    await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  } finally {
    await sql.end({ timeout: 5 })
  }
}

/** Drops a MariaDB database. */
export const dropMariadbDatabase = async (database: string) => {
  const mysql = await import('mysql2/promise')
  const connection = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root' })
  try {
    await connection.query(`DROP DATABASE IF EXISTS \`${database}\``)
  } finally {
    await connection.end()
  }
}
