/**
 * The guardrails' own state on a request (src/engine/request-slot.ts): the guardrails governing it, and what their
 * content filters found (redacted, flagged), which the usage ledger records.
 */

import { requestSlot } from '../../engine/request-slot'
import type { AppliedGuardrail } from './applicable'
import type { GuardrailEvent } from './enforce'

/** The guardrails governing the caller (on its scope) and its request; absent when none does. */
export const GUARDRAILS = requestSlot<AppliedGuardrail[]>('guardrails')

const EVENTS = requestSlot<GuardrailEvent[]>('guardrail events')

/** What the guardrails' content filters found for the request so far; absent when no filter ran. */
export const guardrailEventsOf = (request: object): readonly GuardrailEvent[] | undefined => EVENTS.get(request)

export const setGuardrailEvents = (request: object, events: GuardrailEvent[]): void => EVENTS.set(request, events)
