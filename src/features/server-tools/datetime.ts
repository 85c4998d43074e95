/**
 * `service:datetime`: the current date and time on the gateway's clock, in an IANA time zone. The request's
 * `parameters.timezone` is the default; the model may ask for another zone in its call.
 */

import * as v from 'valibot'
import { ServerToolRefusal, historyPair, type ServerTool } from './contract'

const isTimeZone = (name: string) => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name })
    return true
  } catch {
    return false
  }
}

export const TimeZoneSchema = v.pipe(v.string(), v.check(isTimeZone, 'must be an IANA time zone name such as Europe/Paris'))

export const DatetimeToolSchema = v.strictObject({
  type: v.literal('service:datetime'),
  parameters: v.optional(v.strictObject({ timezone: v.optional(TimeZoneSchema) })),
})

const CallSchema = v.object({ timezone: v.optional(v.nullable(v.string())) })

const pad = (value: number, width = 2) => String(value).padStart(width, '0')

/** `2025-03-01T10:04:05+01:00`: the instant as the wall clock of `timeZone` shows it, with its offset. */
export const zonedIsoString = (epochMs: number, timeZone: string): string => {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(new Date(epochMs))
      .map((part) => [part.type, part.value]),
  )
  // The wall clock read as if it were UTC, minus the instant, is the zone's offset at that instant.
  const wall = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second))
  const offsetMinutes = Math.round((wall - Math.floor(epochMs / 1000) * 1000) / 60_000)
  const sign = offsetMinutes < 0 ? '-' : '+'
  const offset = offsetMinutes === 0 ? 'Z' : `${sign}${pad(Math.floor(Math.abs(offsetMinutes) / 60))}:${pad(Math.abs(offsetMinutes) % 60)}`
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}${offset}`
}

const weekday = (epochMs: number, timeZone: string) => new Intl.DateTimeFormat('en-US', { timeZone, weekday: 'long' }).format(new Date(epochMs))

export const datetimeTool = (tool: v.InferOutput<typeof DatetimeToolSchema>): ServerTool => {
  const defaultZone = tool.parameters?.timezone ?? 'UTC'
  return {
    type: tool.type,
    itemIdPrefix: 'dt',
    itemType: 'service:datetime',
    definition: {
      type: 'function',
      name: 'service_datetime',
      description: `Returns the current date and time. Pass an IANA time zone name (such as Europe/Paris) to get it there; the default is ${defaultZone}.`,
      parameters: {
        type: 'object',
        properties: { timezone: { type: 'string', description: `IANA time zone name; default ${defaultZone}` } },
        additionalProperties: false,
      },
    },
    pendingItem: (id) => ({ type: 'service:datetime', id, status: 'in_progress', datetime: '', timezone: defaultZone }),
    failedItem: (id) => ({ type: 'service:datetime', id, status: 'incomplete', datetime: '', timezone: defaultZone }),
    toHistory(item) {
      const timezone = typeof item.timezone === 'string' && item.timezone !== '' ? item.timezone : defaultZone
      const isDone = item.status === 'completed' && typeof item.datetime === 'string'
      return historyPair(item, 'service_datetime', { timezone }, isDone ? JSON.stringify({ datetime: item.datetime, timezone }) : 'Not run.')
    },
    async run(call, context) {
      const parsed = v.safeParse(CallSchema, call.arguments)
      if (!parsed.success) throw new ServerToolRefusal('timezone must be a string')
      const timeZone = parsed.output.timezone || defaultZone
      if (!isTimeZone(timeZone)) throw new ServerToolRefusal(`"${timeZone}" is not an IANA time zone name; use a name such as Europe/Paris or UTC`)
      const now = context.service.now()
      const datetime = zonedIsoString(now, timeZone)
      return {
        output: JSON.stringify({ datetime, timezone: timeZone, weekday: weekday(now, timeZone) }),
        item: { type: 'service:datetime', id: call.itemId, status: 'completed', datetime, timezone: timeZone },
      }
    },
  }
}
