// The overview reloads itself every 15 seconds (a file, not inline: the CSP allows no inline script).
setTimeout(function () { location.reload(); }, 15000);
