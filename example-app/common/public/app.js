/* global document, fetch */
// Loads the user's notes from the api site with a credentialed fetch (the shared session cookie goes along), and
// adds notes with a JSON POST, which makes the browser send a CORS preflight first.
(function () {
  'use strict';
  function start() {
    var section = document.getElementById('notes');
    if (!section) return;
    var api = section.getAttribute('data-api');
    var status = document.getElementById('notes-status');
    var list = document.getElementById('notes-list');
    var form = document.getElementById('note-form');

    function report(state, text) {
      status.setAttribute('data-state', state);
      status.textContent = text;
    }

    function render(notes) {
      list.textContent = '';
      notes.forEach(function (note) {
        var item = document.createElement('li');
        item.textContent = note.title;
        list.appendChild(item);
      });
    }

    function load() {
      return fetch(api, { credentials: 'include', headers: { Accept: 'application/json' } })
        .then(function (response) {
          if (!response.ok) throw new Error('the api answered ' + response.status);
          return response.json();
        })
        .then(function (notes) {
          render(notes);
          report('ok', 'The api answered with ' + notes.length + ' note' + (notes.length === 1 ? '' : 's') + '.');
        })
        .catch(function (error) {
          report('error', 'Could not load notes: ' + error.message);
        });
    }

    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var title = form.elements.title.value;
      fetch(api, {
        method: 'POST',
        credentials: 'include',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ title: title, body: '' }),
      })
        .then(function (response) {
          if (response.status !== 201) throw new Error('the api answered ' + response.status);
          form.reset();
          return load();
        })
        .catch(function (error) {
          report('error', 'Could not add the note: ' + error.message);
        });
    });

    load();
  }
  document.addEventListener('DOMContentLoaded', start);
})();
