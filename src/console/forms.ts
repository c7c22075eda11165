import { type Static, type TSchema, Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { CodeSchema } from '../../schemas/common.js'
import { CurrentPasswordSchema } from '../../schemas/proof.js'
import { validationFailed } from '../errors.js'
import type { InlineProof } from '../services/sign-in/reauthentication.js'
import { field, paragraph } from './pages.js'
import { say, type StringKey } from './strings.js'

/**
 * What the console's forms carry besides their fields (docs/console.md): the page's token, and
 * the proof of a sensitive change as the API takes it beside the change.
 */
export const TOKEN = { _csrf: Type.String({ maxLength: 200 }) }

/** The proof's fields; a field left empty is not given. */
export const PROOF = {
  current_password: Type.Optional(CurrentPasswordSchema),
  mfa_code: Type.Optional(Type.Union([Type.Literal(''), CodeSchema]))
}

export const TokenFormSchema = Type.Object(TOKEN, { additionalProperties: false })

/** A list screen's query: what it searches for, and the cursor of its page. */
export const ListQuerySchema = Type.Object({
  search: Type.Optional(Type.String({ maxLength: 100 })),
  cursor: Type.Optional(Type.String({ maxLength: 1000 }))
}, { additionalProperties: false })

/**
 * What a screen's forms did, each by the word of `?done=` its redirect carries, and what the page
 * after it says: `schema` takes those words alone, `notice` is the page's line for one (or none).
 */
export function doneNotices<Word extends string> (said: Record<Word, StringKey>) {
  const words = Object.keys(said) as Word[]
  return {
    schema: Type.Object({
      done: Type.Optional(Type.Union(words.map((word) => Type.Literal(word))))
    }, { additionalProperties: false }),
    notice: (word: Word | undefined): string => word === undefined ? '' : paragraph(say(said[word]), 'notice')
  }
}
export const ProofFormSchema = Type.Object({ ...TOKEN, ...PROOF }, { additionalProperties: false })

/** The proof a form carried, without its fields left empty. */
export function proofOf (form: Static<typeof ProofFormSchema>): InlineProof {
  const { current_password: currentPassword, mfa_code: mfaCode } = form
  return {
    ...(currentPassword !== undefined && currentPassword !== '' && { current_password: currentPassword }),
    ...(mfaCode !== undefined && mfaCode !== '' && { mfa_code: mfaCode })
  }
}

/**
 * A field holding JSON the page's script wrote (a passkey's answer), as the API's schema takes it;
 * else a refusal of the field.
 */
export function jsonField<Schema extends TSchema> (schema: Schema, json: string, name: string): Static<Schema> {
  let parsed: unknown
  try {
    parsed = JSON.parse(json)
  } catch {
    parsed = undefined
  }
  if (!Value.Check(schema, parsed)) throw validationFailed([{ path: `/${name}`, message: 'is not a passkey\'s answer' }])
  return parsed
}

/** The proof's fields on a page. */
export function proofFields (): string {
  return `${field('currentPassword', 'current_password', '', 'type="password" autocomplete="current-password"')}
${field('mfaCode', 'mfa_code', '', 'inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}"')}`
}
