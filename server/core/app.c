/*
 * app.c - server-wide helpers on struct srv_app.
 */
#include "app.h"

void app_wake_scheduler(struct srv_app *app)
{
    pthread_mutex_lock(&app->wake_lock);
    app->wake_pending = 1;
    pthread_cond_signal(&app->wake_cond);
    pthread_mutex_unlock(&app->wake_lock);
}

/* Sequentially consistent, the default: nothing else is published through
 * the flag (each *_stop() joins its thread, and pthread_join() orders the
 * rest), so a weaker order would buy nothing worth a reader's doubt. */
void app_stop(struct srv_app *app)
{
    atomic_store(&app->stopping, 1);
}

int app_stopping(const struct srv_app *app)
{
    return atomic_load(&app->stopping);
}
