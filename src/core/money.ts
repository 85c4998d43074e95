/**
 * Money as the spend counters hold it: whole nano-dollars (1e-9 USD). Counters add integers, which a
 * double represents exactly up to 2^53 (about 9 million USD), so a reservation and its settlement
 * cancel to the last unit however they interleave; adding the dollar amounts themselves would leave
 * binary-float remainders behind.
 */

export const NANO_PER_USD = 1_000_000_000

/** USD → whole nano-dollars. */
export const toNano = (usd: number): number => Math.round(usd * NANO_PER_USD)

/** Whole nano-dollars → USD. */
export const fromNano = (nano: number): number => nano / NANO_PER_USD

/** `$0.25`, `$1.50`, `$0.000011`: at least two decimals, at most nine, no float tails. */
export const formatUsd = (nano: number): string => {
  const text = (Math.abs(nano) / NANO_PER_USD).toFixed(9).replace(/0+$/, '')
  const [whole, fraction = ''] = text.split('.')
  return `${nano < 0 ? '-' : ''}$${whole}.${fraction.padEnd(2, '0')}`
}
