/**
 * Bearer JWT verification with `jose`: the signature (a shared secret, a
 * public key, or a JWKS endpoint), the expiry, and the issuer and audience
 * when given; the user id is a claim of the token.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as jose from "jose"
import * as Api from "../WorkflowApi.js"
import type * as WorkflowServer from "../WorkflowServer.js"

/** @internal */
export type JwtOptions = WorkflowServer.JwtOptions

const unauthorized = (message: string) => new Api.Unauthorized({ message })

type Key = Uint8Array | jose.CryptoKey | ReturnType<typeof jose.createRemoteJWKSet>

/** @internal */
export const jwt = (options: JwtOptions): WorkflowServer.Authenticate => {
  const algorithms = options.algorithms === undefined ? undefined : [...options.algorithms]
  let key: Promise<Key> | undefined
  const resolveKey = (): Promise<Key> => {
    if (key !== undefined) return key
    if (options.secret !== undefined) {
      key = Promise.resolve(
        typeof options.secret === "string" ? new TextEncoder().encode(options.secret) : options.secret
      )
    } else if (options.publicKey !== undefined) {
      key = jose.importSPKI(options.publicKey, options.algorithms?.[0] ?? "RS256")
    } else if (options.jwksUrl !== undefined) {
      key = Promise.resolve(jose.createRemoteJWKSet(new URL(options.jwksUrl)))
    } else {
      key = Promise.reject(new Error("WorkflowServer.jwt needs a secret, a publicKey or a jwksUrl"))
    }
    return key
  }
  const claim = options.userClaim ?? "sub"
  const verifyOptions: jose.JWTVerifyOptions = {
    ...(algorithms === undefined ? {} : { algorithms }),
    ...(options.issuer === undefined ? {} : { issuer: options.issuer as string | Array<string> }),
    ...(options.audience === undefined ? {} : { audience: options.audience as string | Array<string> }),
    ...(options.clockTolerance === undefined ? {} : { clockTolerance: options.clockTolerance })
  }
  return (request) => {
    const header = request.headers["authorization"]
    if (header === undefined || header.trim() === "") return Effect.succeed(undefined)
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header)
    if (match === null) return Effect.fail(unauthorized("The Authorization header is not a bearer token"))
    const token = match[1]!
    return Effect.tryPromise({
      try: async () => {
        const resolved = await resolveKey()
        const { payload } = typeof resolved === "function"
          ? await jose.jwtVerify(token, resolved, verifyOptions)
          : await jose.jwtVerify(token, resolved, verifyOptions)
        return payload
      },
      catch: (error) =>
        unauthorized(
          error instanceof jose.errors.JOSEError
            ? `The bearer token is not valid: ${error.code}`
            : "The bearer token could not be verified"
        )
    }).pipe(
      Effect.flatMap((payload) => {
        const userId = payload[claim]
        return typeof userId === "string" && userId !== ""
          ? Effect.succeed(userId)
          : Effect.fail(unauthorized(`The bearer token has no '${claim}' claim`))
      })
    )
  }
}
