import { timingSafeEqual } from 'node:crypto'

/** Whether two strings are the same, compared in constant time (a secret's length is not hidden). */
export function sameText (a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}
