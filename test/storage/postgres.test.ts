import { POSTGRES_URL, dropPostgresSchema } from '../helpers/stores'
import { createPostgresDialect } from '../../src/storage/sql/postgres'
import { describeSqlDriver } from './sql-cases'

type Admin = import('postgres').Sql
let admin: Admin | undefined

const connectAdmin = async (): Promise<Admin> => {
  const { default: postgres } = await import('postgres')
  admin ??= postgres(POSTGRES_URL, { max: 1, onnotice: () => {} })
  return admin
}

describeSqlDriver({
  name: 'postgres',
  port: 5432,
  url: (port = 5432) => POSTGRES_URL.replace(':5432/', `:${port}/`),
  async raw(text, params = []) {
    let index = 0
    const sql = await connectAdmin()
    return sql.unsafe(
      text.replace(/\?/g, () => `$${++index}`),
      params as never[],
    )
  },
  table: (namespace, table) => `"${namespace}"."modelgate_${table}"`,
  jsonText: (column) => `${column}::text`,
  dropNamespace: dropPostgresSchema,
  async end() {
    await admin?.end({ timeout: 5 })
  },
  createDialect: createPostgresDialect,
  statementsPerBatch: 1,
  sessionIdQuery: 'SELECT pg_backend_pid() AS id',
  waitersQuery: 'SELECT count(*) AS n FROM pg_stat_activity WHERE ?::int = ANY(pg_blocking_pids(pid))',
})
