/**
 * Provider keys at rest: after creating and rotating a BYOK credential, the raw stored bytes of every
 * driver (memory, the embedded file store, SQLite, Redis, PostgreSQL, MariaDB) hold no trace of either key.
 */

import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createGateway } from '../../src/gateway/gateway'
import { silentLogger } from '../../src/core/logger'
import type { StorageDriver } from '../../src/storage/contract'
import { openFileStorage } from '../../src/storage/file'
import { memoryStorage } from '../../src/storage/memory'
import { redisStorage } from '../../src/storage/redis'
import { openSqlStorage } from '../../src/storage/sql'
import { openSqliteStorage } from '../../src/storage/sqlite'
import { TEST_ENCRYPTION_KEY } from '../helpers/gateway'
import {
  MARIADB_URL,
  POSTGRES_URL,
  REDIS_URL,
  dropMariadbDatabase,
  dropPostgresSchema,
  dropRedisPrefix,
  requireServer,
  uniqueNamespace,
} from '../helpers/stores'

const FIRST_KEY = 'sk-proj-FIRSTsecretMaterial0123456789abcdefXYZ'
const ROTATED_KEY = 'sk-ant-api03-ROTATEDsecretMaterial9876543210zyxw'

/** Every 8-character slice of the key's middle: a leak of any part of the key is a leak. */
const slicesOf = (key: string) => Array.from({ length: key.length - 16 }, (_, index) => key.slice(index + 4, index + 12))

interface Driver {
  name: string
  open(): Promise<{ storage: StorageDriver; dump(): Promise<string>; cleanup(): Promise<void> }>
}

const DRIVERS: Driver[] = [
  {
    name: 'memory',
    async open() {
      const storage = memoryStorage()
      const collections = ['accounts', 'workspaces', 'api_keys', 'byok_credentials', 'idempotency_keys']
      return {
        storage,
        dump: async () => JSON.stringify(await Promise.all(collections.map((collection) => storage.list(collection)))),
        cleanup: async () => {},
      }
    },
  },
  {
    name: 'file',
    async open() {
      const directory = await mkdtemp(join(tmpdir(), 'modelgate-at-rest-'))
      const storage = await openFileStorage({ directory, compactAfter: 3 })
      return {
        storage,
        async dump() {
          // A compaction runs beside the writes and renames its temporary snapshot when done: read again when a
          // listed file is gone.
          for (;;) {
            try {
              let text = ''
              for (const file of await readdir(directory)) text += await readFile(join(directory, file), 'utf8')
              return text
            } catch (error) {
              if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
            }
          }
        },
        cleanup: () => rm(directory, { recursive: true, force: true }),
      }
    },
  },
  {
    name: 'SQLite',
    async open() {
      const directory = await mkdtemp(join(tmpdir(), 'modelgate-at-rest-'))
      const storage = await openSqliteStorage({ path: join(directory, 'modelgate.db') })
      return {
        storage,
        async dump() {
          // The database file, its write-ahead log and shared memory: whatever a copy of the directory would hold.
          let text = ''
          for (const file of await readdir(directory)) text += (await readFile(join(directory, file))).toString('latin1')
          return text
        },
        cleanup: () => rm(directory, { recursive: true, force: true }),
      }
    },
  },
  {
    name: 'Redis',
    async open() {
      await requireServer(6379)
      const prefix = `${uniqueNamespace('rest')}:`
      const storage = redisStorage({ url: REDIS_URL, prefix })
      return {
        storage,
        async dump() {
          const { default: Redis } = await import('ioredis')
          const redis = new Redis(REDIS_URL)
          try {
            const keys = await redis.keys(`${prefix}*`)
            const parts: unknown[] = [keys]
            for (const key of keys) {
              const type = await redis.type(key)
              if (type === 'hash') parts.push(await redis.hgetall(key))
              else if (type === 'zset') parts.push(await redis.zrange(key, 0, -1))
              else if (type === 'string') parts.push(await redis.get(key))
              else parts.push(type)
            }
            return JSON.stringify(parts)
          } finally {
            redis.disconnect()
          }
        },
        cleanup: () => dropRedisPrefix(prefix),
      }
    },
  },
  {
    name: 'PostgreSQL',
    async open() {
      await requireServer(5432)
      const schema = uniqueNamespace('rest')
      const storage = await openSqlStorage({ url: POSTGRES_URL, schema })
      return {
        storage,
        async dump() {
          const { default: postgres } = await import('postgres')
          const sql = postgres(POSTGRES_URL, { max: 1, onnotice: () => {} })
          try {
            const tables = await sql`SELECT table_name FROM information_schema.tables WHERE table_schema = ${schema}`
            let text = ''
            for (const { table_name } of tables) {
              const rows = await sql.unsafe(`SELECT row_to_json(t)::text AS row FROM "${schema}"."${table_name}" t`)
              text += rows.map((row) => row.row).join('\n')
            }
            return text
          } finally {
            await sql.end({ timeout: 5 })
          }
        },
        cleanup: () => dropPostgresSchema(schema),
      }
    },
  },
  {
    name: 'MariaDB',
    async open() {
      await requireServer(3306)
      const database = uniqueNamespace('rest')
      const storage = await openSqlStorage({ url: MARIADB_URL, schema: database })
      return {
        storage,
        async dump() {
          const mysql = await import('mysql2/promise')
          const connection = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root', database })
          try {
            const [tables] = await connection.query('SHOW TABLES')
            let text = ''
            for (const table of tables as Array<Record<string, string>>) {
              const [rows] = await connection.query(`SELECT * FROM \`${Object.values(table)[0]}\``)
              text += JSON.stringify(rows, (_, value) => (Buffer.isBuffer(value) ? value.toString('utf8') : value))
            }
            return text
          } finally {
            await connection.end()
          }
        },
        cleanup: () => dropMariadbDatabase(database),
      }
    },
  },
]

describe.each(DRIVERS)('BYOK keys at rest on $name', (driver) => {
  it('stores no trace of the raw key, before and after rotation', async () => {
    const { storage, dump, cleanup } = await driver.open()
    try {
      const gateway = createGateway({ storage, logger: silentLogger, encryptionKeys: [TEST_ENCRYPTION_KEY] })
      const { key } = await gateway.admin.createKey({ kind: 'management' })
      const call = (method: string, path: string, json: unknown) =>
        gateway.fetch(
          new Request(`http://gateway.test/api/v1${path}`, {
            method,
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify(json),
          }),
        )
      const created = await call('POST', '/byok', { provider: 'openai', key: FIRST_KEY, name: 'prod' })
      expect(created.status).toBe(200)
      const { data } = (await created.json()) as { data: { id: string; label: string } }
      expect(data.label).toBe('sk-proj-...fXYZ')

      const before = await dump()
      expect(before).toContain(data.id)
      expect(before).toContain(data.label)
      for (const slice of [FIRST_KEY, ...slicesOf(FIRST_KEY)]) expect(before).not.toContain(slice)

      const rotated = await call('PATCH', `/byok/${data.id}`, { key: ROTATED_KEY })
      expect(rotated.status).toBe(200)
      const after = await dump()
      for (const slice of [FIRST_KEY, ROTATED_KEY, ...slicesOf(FIRST_KEY), ...slicesOf(ROTATED_KEY)]) {
        expect(after).not.toContain(slice)
      }
      await gateway.close()
    } finally {
      await cleanup()
    }
  })
})
