/**
 * A small session pool with one deadline per storage call. Both client libraries are used one
 * connection per session, so a call that runs out of time can cut exactly its own connection:
 * neither postgres.js nor mysql2 can stop a statement whose connection stopped answering.
 */
import type { SqlCall, SqlSession, SqlValue } from './dialect'

/** A storage call (waiting for a session plus its statements) outlived its deadline. */
export class SqlTimeoutError extends Error {
  readonly code = 'MODELGATE_SQL_TIMEOUT'
  constructor(timeoutMs: number) {
    super(`no answer from the database within ${timeoutMs} ms`)
    this.name = 'SqlTimeoutError'
  }
}

/** The connection of a call closed between two of its statements; the rest must not run elsewhere. */
export class SqlConnectionLostError extends Error {
  readonly code = 'MODELGATE_SQL_CONNECTION_LOST'
  constructor() {
    super('the database connection closed during the call')
    this.name = 'SqlConnectionLostError'
  }
}

/** The pool was closed. */
export class SqlPoolClosedError extends Error {
  readonly code = 'MODELGATE_SQL_POOL_CLOSED'
  constructor() {
    super('the session pool is closed')
    this.name = 'SqlPoolClosedError'
  }
}

/** What a pool may know of a call. */
export interface RunOptions {
  /**
   * The call may change something (a pool that commits several calls together, SQLite's, takes only these; the
   * others ignore it).
   */
  isWrite?: boolean
}

export interface SessionPool {
  /**
   * Runs `task` on a session of its own. After `timeoutMs` (from now, including the wait for a
   * session) the call rejects with `SqlTimeoutError` and its connection is cut. Statements of an
   * expired call fail at once, and the session returns to the pool only once `task` has settled,
   * so a late statement can never land on another call's connection.
   */
  run<T>(timeoutMs: number, task: (session: SqlCall) => Promise<T>, options?: RunOptions): Promise<T>
  /** Rejects waiting calls, waits for running ones (each bounded by its deadline), then closes every session. */
  close(graceMs: number): Promise<void>
}

interface Waiter {
  /** Hands over an idle session, or `undefined` to say a slot is free to connect. */
  resolve(session: SqlSession | undefined): void
  reject(error: unknown): void
}

const noop = () => {}

/** How long a session released after `close()` may take to say goodbye. */
const CLOSE_GRACE_MS = 1_000

export const createSessionPool = (options: { size: number; connect: () => Promise<SqlSession> }): SessionPool => {
  const idle: SqlSession[] = []
  const waiters: Waiter[] = []
  const running = new Set<Promise<unknown>>()
  const ending = new Set<Promise<unknown>>()
  /** Sessions open or being opened. */
  let openCount = 0
  let isClosed = false
  let closing: Promise<void> | undefined

  const endSession = (session: SqlSession, graceMs: number) => {
    const ended = session.end(graceMs).catch(noop)
    ending.add(ended)
    void ended.finally(() => ending.delete(ended))
  }

  /** A slot became free: let the longest waiter connect. */
  const wakeOne = () => waiters.shift()?.resolve(undefined)

  const release = (session: SqlSession) => {
    if (isClosed || session.isBroken) {
      openCount--
      endSession(session, isClosed ? CLOSE_GRACE_MS : 0)
      wakeOne()
      return
    }
    const waiter = waiters.shift()
    if (waiter) waiter.resolve(session)
    else idle.push(session)
  }

  const acquire = async (register: (waiter: Waiter) => void): Promise<SqlSession> => {
    for (;;) {
      if (isClosed) throw new SqlPoolClosedError()
      let session: SqlSession | undefined
      while ((session = idle.pop())) {
        if (!session.isBroken) return session
        openCount--
        endSession(session, 0)
      }
      if (openCount < options.size) {
        openCount++
        try {
          return await options.connect()
        } catch (error) {
          openCount--
          wakeOne()
          throw error
        }
      }
      const handed = await new Promise<SqlSession | undefined>((resolve, reject) => {
        const waiter = { resolve, reject }
        waiters.push(waiter)
        register(waiter)
      })
      if (handed) return handed
    }
  }

  const run = <T>(timeoutMs: number, task: (session: SqlCall) => Promise<T>): Promise<T> => {
    if (isClosed) return Promise.reject(new SqlPoolClosedError())
    let session: SqlSession | undefined
    let waiter: Waiter | undefined
    let isExpired = false
    let expire: (error: Error) => void = noop
    const expired = new Promise<never>((_, reject) => {
      expire = reject
    })
    expired.catch(noop)

    const timer = setTimeout(() => {
      isExpired = true
      const error = new SqlTimeoutError(timeoutMs)
      if (waiter) {
        const index = waiters.indexOf(waiter)
        if (index !== -1) waiters.splice(index, 1)
        waiter.reject(error)
      }
      session?.abort()
      expire(error)
    }, timeoutMs)

    const callSession: SqlCall = {
      query(text: string, params?: readonly SqlValue[]) {
        if (isExpired || !session) return Promise.reject(new SqlTimeoutError(timeoutMs))
        return Promise.race([session.query(text, params), expired])
      },
      abort() {
        session?.abort()
      },
    }

    const work = (async () => {
      const acquired = await acquire((registered) => {
        waiter = registered
      })
      waiter = undefined
      session = acquired
      if (isExpired) throw new SqlTimeoutError(timeoutMs)
      acquired.startCall()
      return task(callSession)
    })()

    const settled = work
      .finally(() => {
        clearTimeout(timer)
        if (session) release(session)
      })
      .catch(noop)
    running.add(settled)
    void settled.finally(() => running.delete(settled))

    return Promise.race([work, expired])
  }

  const close = (graceMs: number): Promise<void> => {
    closing ??= (async () => {
      isClosed = true
      for (const waiter of waiters.splice(0)) waiter.reject(new SqlPoolClosedError())
      while (running.size > 0) await Promise.allSettled([...running])
      for (const session of idle.splice(0)) {
        openCount--
        endSession(session, graceMs)
      }
      while (ending.size > 0) await Promise.allSettled([...ending])
    })()
    return closing
  }

  return { run, close }
}
