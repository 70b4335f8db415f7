/**
 * A service process for the in-transaction notary tests: an HTTP service whose
 * database is PostgreSQL, performing each notarized request with
 * performInTransaction-style steps on its own connection: BEGIN, claim, its
 * change (a row in app.charges), performed, COMMIT.
 *
 * PLAN.stop names where it stops and waits to be SIGKILLed: "before-commit"
 * (its change and its performed line written, not committed) or
 * "after-commit" (committed, no answer sent yet). It prints `url <url>` once
 * listening and `stopped <where>` when it stops.
 */
import { createServer } from 'node:http'
import pg from 'pg'
import { fromBase64Url } from '../../src/core/crypto/encoding.js'
import { ATTEMPT_HEADER, EFFECT_HEADER } from '../../src/core/notary/headers.js'
import { claimInTransaction } from '../../src/core/notary/in-transaction.js'

export interface PgServicePlan {
  url: string
  schema: string
  service: string
  seed: string
  publicKey: string
  stop?: 'before-commit' | 'after-commit'
}

const plan = JSON.parse(process.env.NOTARY_PG_SERVICE_PLAN!) as PgServicePlan
const key = { seed: fromBase64Url(plan.seed)!, publicKey: plan.publicKey }
const pool = new pg.Pool({ connectionString: plan.url, max: 4 })

const stopHere = async (where: string): Promise<never> => {
  process.stdout.write(`stopped ${where}\n`)
  // Waits for the parent's SIGKILL, holding the transaction (and its connection) open.
  return new Promise<never>(() => setInterval(() => undefined, 60_000))
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', () => {
    void (async () => {
      const effect = String(req.headers[EFFECT_HEADER] ?? '')
      const attempt = Number(req.headers[ATTEMPT_HEADER])
      const input = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { args?: { amount?: string } }
      const db = await pool.connect()
      try {
        await db.query('BEGIN')
        const claim = await claimInTransaction(db, { service: plan.service, key, schema: plan.schema }, effect, attempt)
        if (!claim.go) {
          await db.query('ROLLBACK')
          res.writeHead(claim.answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(claim.answer.body))
          return
        }
        const { rows } = await db.query<{ id: number }>('INSERT INTO app.charges (effect, attempt, amount) VALUES ($1, $2, $3) RETURNING id', [effect, attempt, input.args?.amount ?? '0'])
        const body = { id: `ch_${rows[0]!.id}` }
        await claim.performed({ status: 200, body })
        if (plan.stop === 'before-commit') await stopHere('before-commit')
        await db.query('COMMIT')
        if (plan.stop === 'after-commit') await stopHere('after-commit')
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body))
      } catch (err) {
        await db.query('ROLLBACK').catch(() => undefined)
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: String(err) }))
      } finally {
        db.release()
      }
    })()
  })
})
server.listen(0, '127.0.0.1', () => {
  const address = server.address() as { port: number }
  process.stdout.write(`url http://127.0.0.1:${address.port}\n`)
})
