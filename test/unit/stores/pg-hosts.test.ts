/**
 * Multi-host connection strings as libpq reads them (hosts.ts): the host
 * list, per-host ports, target_session_attrs, one URL per host that pg's own
 * parser accepts, and no password in any description.
 */
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { describePostgres } from '../../../src/core/stores/postgres/connect.js'
import { HostChoice, parsePgUrl } from '../../../src/core/stores/postgres/hosts.js'

describe('parsePgUrl', () => {
  it('reads a host list with per-host ports and the session attributes', () => {
    const t = parsePgUrl('postgresql://app:s3cret@h1:5432,h2:5433,h3/orders?target_session_attrs=read-write&sslmode=disable')
    expect(t.hosts).toEqual([{ host: 'h1', port: 5432 }, { host: 'h2', port: 5433 }, { host: 'h3', port: undefined }])
    expect(t.attrs).toBe('read-write')
    expect(t.urlFor(t.hosts[1]!)).toBe('postgresql://app:s3cret@h2:5433/orders?sslmode=disable')
    expect(t.urlFor(t.hosts[2]!)).toBe('postgresql://app:s3cret@h3/orders?sslmode=disable')
    // What pg itself parses from each host's URL.
    const c = new pg.Client({ connectionString: t.urlFor(t.hosts[1]!) })
    expect({ host: c.host, port: c.port, user: c.user, password: c.password, database: c.database }).toEqual({ host: 'h2', port: 5433, user: 'app', password: 's3cret', database: 'orders' })
  })

  it('defaults to any; one host stays one host', () => {
    const t = parsePgUrl('postgres://u@db.example:6543/x')
    expect(t).toMatchObject({ attrs: 'any', hosts: [{ host: 'db.example', port: 6543 }] })
    expect(t.urlFor(t.hosts[0]!)).toBe('postgres://u@db.example:6543/x')
  })

  it.each(['any', 'read-write', 'read-only', 'primary', 'standby', 'prefer-standby'])('takes target_session_attrs=%s', (a) => {
    expect(parsePgUrl(`postgresql://h1,h2/db?target_session_attrs=${a}`).attrs).toBe(a)
  })

  it('refuses an unknown target_session_attrs and a bad port, naming them', () => {
    expect(() => parsePgUrl('postgresql://h1,h2/db?target_session_attrs=writable')).toThrow(/target_session_attrs = "writable" is not one of any, read-write/)
    expect(() => parsePgUrl('postgresql://h1:99999,h2/db')).toThrow(/"99999" is not a port/)
  })

  it('takes IPv6 addresses in brackets', () => {
    const t = parsePgUrl('postgresql://[::1]:5432,[fe80::2]/db')
    expect(t.hosts).toEqual([{ host: '[::1]', port: 5432 }, { host: '[fe80::2]', port: undefined }])
    expect(t.urlFor(t.hosts[0]!)).toBe('postgresql://[::1]:5432/db')
  })

  it('takes hosts and ports as parameters (libpq\'s other spelling)', () => {
    const t = parsePgUrl('postgresql://u@/db?host=h1,h2&port=5432,5433&target_session_attrs=primary')
    expect(t.hosts).toEqual([{ host: 'h1', port: 5432 }, { host: 'h2', port: 5433 }])
    expect(t.urlFor(t.hosts[1]!)).toBe('postgresql://u@h2:5433/db')
    const one = parsePgUrl('postgresql://h1,h2/db?port=6000')
    expect(one.hosts).toEqual([{ host: 'h1', port: 6000 }, { host: 'h2', port: 6000 }])
    expect(() => parsePgUrl('postgresql://h1,h2,h3/db?port=1,2')).toThrow(/2 ports for 3 hosts/)
  })

  it('tries the host that qualified last first, for read-write; in order for any and prefer-standby', () => {
    const rw = new HostChoice(parsePgUrl('postgresql://a,b,c/db?target_session_attrs=read-write'))
    expect(rw.order()).toEqual([0, 1, 2])
    rw.last = 2
    expect(rw.order()).toEqual([2, 0, 1])
    for (const attrs of ['any', 'prefer-standby']) {
      const c = new HostChoice(parsePgUrl(`postgresql://a,b,c/db?target_session_attrs=${attrs}`))
      c.last = 2
      expect(c.order()).toEqual([0, 1, 2])
    }
  })
})

describe('describePostgres', () => {
  it('names every host and the session asked for, never the password', () => {
    const d = describePostgres('postgresql://app:s3cret@h1:5432,h2:5433/orders?target_session_attrs=read-write', 'interlock')
    expect(d).toBe('PostgreSQL schema "interlock" in database orders on h1:5432, h2:5433 (read-write)')
    expect(d).not.toContain('s3cret')
    expect(describePostgres('postgres://app:s3cret@db.example:6543/orders?sslmode=require', 'interlock')).toBe('PostgreSQL schema "interlock" in database orders on db.example:6543')
  })
})
