import type { Connection } from 'mysql2/promise'
import { MARIADB_URL, dropMariadbDatabase } from '../helpers/stores'
import { createMysqlDialect } from '../../src/storage/sql/mysql'
import { describeSqlDriver } from './sql-cases'

let admin: Connection | undefined

const connectAdmin = async (): Promise<Connection> => {
  const mysql = await import('mysql2/promise')
  admin ??= await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root' })
  return admin
}

// The mariadb:// scheme; the driver reads mysql:// URLs the same way.
describeSqlDriver({
  name: 'mariadb',
  port: 3306,
  url: (port = 3306) => MARIADB_URL.replace('mysql://', 'mariadb://').replace(':3306/', `:${port}/`),
  async raw(text, params = []) {
    const connection = await connectAdmin()
    const [rows] = await connection.execute(text, params as never[])
    return Array.isArray(rows) ? (rows as Array<Record<string, unknown>>) : []
  },
  table: (namespace, table) => `\`${namespace}\`.\`modelgate_${table}\``,
  jsonText: (column) => column,
  dropNamespace: dropMariadbDatabase,
  async end() {
    await admin?.end()
  },
  createDialect: (settings) => createMysqlDialect({ ...settings, database: settings.schema! }),
  statementsPerBatch: 1,
  sessionIdQuery: 'SELECT CONNECTION_ID() AS id',
  waitersQuery: `SELECT COUNT(*) AS n FROM information_schema.INNODB_LOCK_WAITS w
    JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id WHERE b.trx_mysql_thread_id = ?`,
})
