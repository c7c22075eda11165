import fp from 'fastify-plugin'
import { LoggingMessageSender, type MessageSender } from '../services/message-sender.js'
import { MfaService } from '../services/mfa.js'

declare module 'fastify' {
  interface FastifyInstance {
    mfa: MfaService
    messageSender: MessageSender
  }
}

export default fp(async (fastify) => {
  const { config } = fastify
  fastify.decorate('mfa', new MfaService({ mfa: fastify.repositories.mfa, secret: config.jwtSecret, issuer: config.mfa.issuer }))
  fastify.decorate('messageSender', new LoggingMessageSender((entry, message) => fastify.log.info(entry, message)))
}, { name: 'mfa', dependencies: ['repositories'] })
