/** Placeholder until the PostgreSQL store lands: reports no server. */
export async function startTestPostgres(): Promise<{ url: string; error?: string; stop(): Promise<void> }> {
  return { url: '', error: 'not started', stop: async () => {} }
}
