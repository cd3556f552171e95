// routes.js - every page of the dashboard, one line each (web/README.md,
// "Adding a page"). The router (app.js) matches location.hash against path,
// imports js/pages/<module> on first use and calls its render(main, ctx).
//
//   path   '/jobs/:id' style; ':name' captures one segment into ctx.params.name
//   module file under js/pages/
//   nav    nav key: the top bar shows t('nav.' + nav) and marks it active;
//          omit for pages that have no entry of their own
//   navTo  the hash the nav entry opens (defaults to '#' + path)
//   roles  roles that may open the page (omit: every signed-in user); the
//          nav entry is hidden from everyone else and the page redirects
//   open   shown signed out (only the sign-in page)
//
// Nav entries appear in the order of this list.
export const ROUTES = [
  { path: '/login', module: 'login.js', open: true },
  { path: '/overview', module: 'overview.js', nav: 'overview' },
  { path: '/wizard', module: 'wizard.js', nav: 'wizard' },
  { path: '/jobs', module: 'jobs.js', nav: 'jobs' },
  { path: '/jobs/:id', module: 'job.js', nav: 'jobs' },
  { path: '/models', module: 'models.js', nav: 'models' },
  { path: '/models/:name', module: 'model.js', nav: 'models' },
  { path: '/deployments', module: 'deployments.js', nav: 'deployments' },
  { path: '/deployments/:name', module: 'deployment.js', nav: 'deployments' },
  { path: '/queue', module: 'queue.js', nav: 'queue' },
  { path: '/nodes', module: 'nodes.js', nav: 'nodes' },
  { path: '/admin', module: 'admin.js', nav: 'admin', roles: ['admin'] },
  { path: '/audit', module: 'audit.js', nav: 'audit', roles: ['admin', 'auditor'] },
  { path: '/account', module: 'account.js', nav: 'account' },
];

// The page a signed-in user lands on.
export const HOME = '#/overview';
