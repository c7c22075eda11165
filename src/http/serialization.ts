import SerializerSelector from '@fastify/fast-json-stringify-compiler'
import { rememberingCompilers } from './compiled-schemas.js'

const selector = SerializerSelector()

/** fast-json-stringify's compiler (Fastify's own), its serializers remembered for the process. */
export const buildSerializer = rememberingCompilers(selector)
