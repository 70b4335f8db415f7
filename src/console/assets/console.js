// Interlock console: live updates. The server says (server-sent events) when
// the outbox changed; the page fetches itself again and swaps its <main>, so
// it stays current without a reload. Everything works without this script
// (plain links and forms); it only keeps the page fresh.
'use strict'
;(() => {
  const status = document.getElementById('live-status')
  const say = (text) => {
    if (status) status.textContent = text
  }
  let version = document.body.dataset.version
  let fetching = false
  let again = false
  let deferred = false

  // Someone typing in a field of the page (a denial's reason) keeps what they typed: the swap waits until they leave it.
  const typing = () => {
    const a = document.activeElement
    return !!a && !!a.closest('main') && /^(INPUT|TEXTAREA|SELECT)$/.test(a.tagName) && a.type !== 'hidden' && a.value !== ''
  }

  async function refresh() {
    if (fetching) {
      again = true
      return
    }
    fetching = true
    try {
      const res = await fetch(location.href, { credentials: 'same-origin', headers: { accept: 'text/html' } })
      if (res.status === 401) {
        say('Live updates stopped: this browser\'s console session ended. Start the console again for a new link.')
        return
      }
      const doc = new DOMParser().parseFromString(await res.text(), 'text/html')
      const main = doc.querySelector('main')
      if (!main) return
      if (typing()) {
        deferred = true
        say('The outbox changed; this page updates when you leave the field you are typing in.')
        return
      }
      swap(main, doc)
      say(`Updated ${new Date().toLocaleTimeString()}.`)
    } catch (e) {
      say(`Live updates: could not fetch this page again (${e && e.message ? e.message : e}); retrying on the next change.`)
    } finally {
      fetching = false
      if (again) {
        again = false
        refresh()
      }
    }
  }

  // Keyboard focus survives the swap: the element with the same id (or the same link) gets it back.
  function swap(main, doc) {
    const active = document.activeElement
    const focusId = active && active.id ? active.id : null
    const focusHref = active && active.tagName === 'A' ? active.getAttribute('href') : null
    document.querySelector('main').replaceWith(document.importNode(main, true))
    document.title = doc.title
    version = doc.body.dataset.version || version
    let next = null
    if (focusId) next = document.getElementById(focusId)
    else if (focusHref) next = document.querySelector(`main a[href="${CSS.escape(focusHref)}"]`)
    if (next) next.focus()
  }

  document.addEventListener('focusout', () => {
    if (!deferred) return
    setTimeout(() => {
      if (deferred && !typing()) {
        deferred = false
        refresh()
      }
    }, 0)
  })

  const events = new EventSource('/events')
  events.addEventListener('open', () => say('Live updates: on.'))
  events.addEventListener('error', () => say('Live updates: connection lost; reconnecting…'))
  events.addEventListener('change', (e) => {
    let data
    try {
      data = JSON.parse(e.data)
    } catch {
      return
    }
    if (data.version !== version) {
      version = data.version
      refresh()
    }
  })
})()
